/* test_infer.c: shape and dtype inference (compiler/infer.c) on hand-built programs: every op
 * family's output shapes and dtypes, -1 propagation, each error message exactly, gradient ops,
 * and fl_infer_program's error location.
 */
#include <CUnit/Basic.h>
#include "tests/cunit.h"
#include <CUnit/CUnit.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/infer.h"
#include "compiler/ops.h"


static FlProgram *P;
static FlBlock *B;

static int setup(void) {
    P = fl_ir_program_new();
    B = fl_ir_block(P, 0);
    return 0;
}
static int teardown(void) {
    fl_ir_program_free(P);
    return 0;
}

/* Declares (or redeclares) a var: shape "-1,13" ("" = rank 0). */
static FlVarDesc *V(const char *name, FlDType t, const char *shape) {
    FlVarDesc *v = fl_ir_var_find(B, name);
    if (!v) v = fl_ir_var_add(B, name);
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

/* Adds each "Slot=a,b" of spec to op (inputs or outputs); outputs are declared if needed. */
static void slots(FlOpDesc *op, const char *spec, bool out) {
    char buf[256];
    snprintf(buf, sizeof buf, "%s", spec);
    for (char *tok = strtok(buf, " "); tok; tok = strtok(NULL, " ")) {
        char *eq = strchr(tok, '=');
        *eq = 0;
        char *save = NULL;
        for (char *a = strtok_r(eq + 1, ",", &save); a; a = strtok_r(NULL, ",", &save)) {
            if (out) {
                fl_ir_op_add_output(op, tok, a);
                if (!fl_ir_var_lookup(P, B, a) && strcmp(a, "@EMPTY@") != 0) fl_ir_var_add(B, a);
            } else {
                fl_ir_op_add_input(op, tok, a);
            }
        }
        if (!*(eq + 1)) (out ? fl_ir_op_add_output_slot : fl_ir_op_add_input_slot)(op, tok);
    }
}

static FlOpDesc *OP(const char *type, const char *ins, const char *outs) {
    FlOpDesc *op = fl_ir_op_append(B, type);
    slots(op, ins, false);
    slots(op, outs, true);
    return op;
}

static void ok(FlOpDesc *op) {
    FlErr e = {{0}};
    FlStatus st = fl_infer_op(P, B, op, &e);
    if (st) fprintf(stderr, "\nunexpected error: %s\n", e.msg);
    CU_ASSERT_EQUAL(st, FL_OK);
}

static void err(FlOpDesc *op, const char *msg) {
    FlErr e = {{0}};
    CU_ASSERT_EQUAL(fl_infer_op(P, B, op, &e), FL_ERROR);
    CHECK_STR(e.msg, msg);
}

/* Checks a var's dtype and shape ("[-1, 13]"). */
static void is(const char *name, FlDType t, const char *shape) {
    FlVarDesc *v = fl_ir_var_lookup(P, B, name);
    CU_ASSERT_PTR_NOT_NULL_FATAL(v);
    FlBuf s = {0};
    fl_ir_shape_str(v->ndim, v->shape, &s);
    CHECK_STR(fl_buf_str(&s), shape);
    if (v->dtype != t)
        fprintf(stderr, "\n%s: dtype %s, expected %s\n", name, fl_dtype_name(v->dtype),
                fl_dtype_name(t));
    CU_ASSERT_EQUAL(v->dtype, t);
    fl_buf_free(&s);
}

static void ints(FlOpDesc *op, const char *name, const char *vals) {
    int64_t d[16];
    size_t n = 0;
    for (const char *s = vals; *s;) {
        char *end;
        d[n++] = strtoll(s, &end, 10);
        s = *end == ',' ? end + 1 : end;
    }
    fl_ir_op_set_ints(op, name, d, n);
}

#define F32 FL_DT_FLOAT32
#define F64 FL_DT_FLOAT64
#define I64 FL_DT_INT64
#define I32 FL_DT_INT32
#define BOOL FL_DT_BOOL

static void test_fill(void) {
    FlOpDesc *op = OP("fill_constant", "", "Out=c");
    ints(op, "shape", "2,3");
    fl_ir_op_set_int(op, "dtype", I64);
    ok(op);
    is("c", I64, "[2, 3]");
    op = OP("uniform_random", "", "Out=u");
    ints(op, "shape", "-1,4");
    ok(op);
    is("u", F32, "[-1, 4]");
    op = OP("gaussian_random", "", "Out=g");
    ints(op, "shape", "5");
    fl_ir_op_set_int(op, "dtype", F64);
    ok(op);
    is("g", F64, "[5]");
    op = OP("fill_constant", "", "Out=c2");
    err(op, "fill_constant: missing attribute 'shape'");
    ints(op, "shape", "2,0");
    err(op, "fill_constant: shape dim 1 is 0 (expected a positive size or -1)");
    ints(op, "shape", "2");
    fl_ir_op_set_int(op, "dtype", 9);
    err(op, "fill_constant: unknown dtype 9");

    V("x", F32, "-1,13");
    ok(OP("fill_zeros_like", "X=x", "Out=z"));
    is("z", F32, "[-1, 13]");
    ok(OP("assign", "X=x", "Out=a"));
    is("a", F32, "[-1, 13]");
    op = OP("cast", "X=x", "Out=xc");
    fl_ir_op_set_int(op, "out_dtype", F64);
    ok(op);
    is("xc", F64, "[-1, 13]");
}

static void test_mul(void) {
    V("x", F32, "-1,13");
    V("w", F32, "13,1");
    ok(OP("mul", "X=x Y=w", "Out=h"));
    is("h", F32, "[-1, 1]");
    V("w12", F32, "12,1");
    err(OP("mul", "X=x Y=w12", "Out=h"),
        "mul: the input has 13 columns but the weight has 12 rows (X [-1, 13], Y [12, 1])");
    /* flattening at num_col_dims */
    V("x3", F32, "2,3,4");
    V("w34", F32, "12,5");
    ok(OP("mul", "X=x3 Y=w34", "Out=h3"));
    is("h3", F32, "[2, 5]");
    V("w4", F32, "4,5");
    FlOpDesc *op = OP("mul", "X=x3 Y=w4", "Out=h4");
    fl_ir_op_set_int(op, "x_num_col_dims", 2);
    ok(op);
    is("h4", F32, "[2, 3, 5]");
    /* unknown dims never fail a check */
    V("xu", F32, "-1,-1");
    ok(OP("mul", "X=xu Y=w", "Out=hu"));
    is("hu", F32, "[-1, 1]");
    V("wi", I64, "13,1");
    err(OP("mul", "X=x Y=wi", "Out=h"), "mul: the input is float32 but the weight is int64");
    V("x1", F32, "13");
    err(OP("mul", "X=x1 Y=w", "Out=h"),
        "mul: x_num_col_dims is 1 but the input X [13] needs it in 1..0");
    err(OP("mul", "X=nope Y=w", "Out=h"), "mul: input X names undeclared var 'nope'");
    err(OP("mul", "Y=w", "Out=h"), "mul: missing input X");
}

static void test_lookup_table(void) {
    V("emb", F32, "100,16");
    V("ids", I64, "-1,1");
    ok(OP("lookup_table", "W=emb Ids=ids", "Out=e"));
    is("e", F32, "[-1, 16]");
    V("ids1", I64, "-1");
    ok(OP("lookup_table", "W=emb Ids=ids1", "Out=e"));
    is("e", F32, "[-1, 16]");
    /* ids of any rank, as Fluid: [N, K, 1] (a padded sentence, a row of K ids) -> [N, K, D] */
    V("ids3", I64, "-1,8,1");
    ok(OP("lookup_table", "W=emb Ids=ids3", "Out=e"));
    is("e", F32, "[-1, 8, 16]");
    V("idf", F32, "-1,1");
    err(OP("lookup_table", "W=emb Ids=idf", "Out=e"), "lookup_table: the ids must be int64, found float32");
    FlOpDesc *op = OP("lookup_table", "W=emb Ids=ids", "Out=e");
    fl_ir_op_set_int(op, "padding_idx", 100);
    err(op, "lookup_table: padding_idx 100 is not a row of the table [100, 16]");
}

static void test_matmul(void) {
    V("a", F32, "2,3");
    V("b", F32, "3,4");
    ok(OP("matmul", "X=a Y=b", "Out=o"));
    is("o", F32, "[2, 4]");
    V("bt", F32, "4,3");
    FlOpDesc *op = OP("matmul", "X=a Y=bt", "Out=o");
    fl_ir_op_set_bool(op, "transpose_Y", true);
    ok(op);
    is("o", F32, "[2, 4]");
    V("at", F32, "3,2");
    op = OP("matmul", "X=at Y=b", "Out=o");
    fl_ir_op_set_bool(op, "transpose_X", true);
    ok(op);
    is("o", F32, "[2, 4]");
    V("ba", F32, "5,2,3");
    ok(OP("matmul", "X=ba Y=b", "Out=o"));
    is("o", F32, "[5, 2, 4]");
    V("bb", F32, "-1,1,3,4");
    ok(OP("matmul", "X=ba Y=bb", "Out=o"));
    is("o", F32, "[-1, 5, 2, 4]");
    V("v3", F32, "3");
    ok(OP("matmul", "X=a Y=v3", "Out=o"));
    is("o", F32, "[2]");
    ok(OP("matmul", "X=v3 Y=v3", "Out=o"));
    is("o", F32, "[1]");
    err(OP("matmul", "X=a Y=a", "Out=o"),
        "matmul: the left operand has 3 columns but the right one has 2 rows (X [2, 3], Y [2, 3])");
    op = OP("matmul", "X=a Y=a", "Out=o");
    fl_ir_op_set_bool(op, "transpose_Y", true);
    ok(op);
    is("o", F32, "[2, 2]");
}

static void test_elementwise(void) {
    V("x", F32, "-1,10");
    V("b", F32, "10");
    ok(OP("elementwise_add", "X=x Y=b", "Out=o"));
    is("o", F32, "[-1, 10]");
    V("y5", F32, "-1,5");
    err(OP("elementwise_add", "X=x Y=y5", "Out=o"),
        "elementwise_add: shapes [-1, 10] and [-1, 5] cannot be broadcast");
    V("c1", F32, "-1,1");
    V("r5", F32, "1,5");
    ok(OP("elementwise_mul", "X=c1 Y=r5", "Out=o"));
    is("o", F32, "[-1, 5]");
    V("u", F32, "-1");
    ok(OP("elementwise_sub", "X=u Y=b", "Out=o"));
    is("o", F32, "[10]");
    V("s", F32, "1");
    ok(OP("elementwise_div", "X=s Y=x", "Out=o"));
    is("o", F32, "[-1, 10]");
    /* Paddle's rule when axis != -1 */
    V("x3", F32, "2,3,4");
    V("y3", F32, "3");
    FlOpDesc *op = OP("elementwise_add", "X=x3 Y=y3", "Out=o");
    fl_ir_op_set_int(op, "axis", 1);
    ok(op);
    is("o", F32, "[2, 3, 4]");
    V("y31", F32, "3,1");
    op = OP("elementwise_add", "X=x3 Y=y31", "Out=o");
    fl_ir_op_set_int(op, "axis", 1);
    ok(op);
    op = OP("elementwise_add", "X=x3 Y=y3", "Out=o");
    fl_ir_op_set_int(op, "axis", 2);
    err(op, "elementwise_add: shapes [2, 3, 4] and [3] cannot be broadcast at axis 2");
    op = OP("elementwise_add", "X=x3 Y=y3", "Out=o");
    fl_ir_op_set_int(op, "axis", 3);
    err(op, "elementwise_add: axis 3 is out of range for shapes [2, 3, 4] and [3]");
    V("xi", I64, "-1,10");
    err(OP("elementwise_add", "X=x Y=xi", "Out=o"), "dtype mismatch: float32 and int64");
    ok(OP("elementwise_max", "X=x Y=b", "Out=o"));
    ok(OP("elementwise_min", "X=x Y=b", "Out=o"));
    ok(OP("elementwise_pow", "X=x Y=b", "Out=o"));
    ok(OP("elementwise_floordiv", "X=xi Y=xi", "Out=oi"));
    is("oi", I64, "[-1, 10]");
    ok(OP("elementwise_mod", "X=xi Y=xi", "Out=oi"));
}

static void test_unary(void) {
    static const char *const ops[] = {"relu", "sigmoid", "tanh", "exp", "log",
                                      "sqrt", "square",  "abs",  "scale"};
    V("x", F64, "-1,7");
    for (size_t i = 0; i < FL_ARRAY_LEN(ops); i++) {
        char out[32];
        snprintf(out, sizeof out, "Out=u%zu", i);
        ok(OP(ops[i], "X=x", out));
        is(out + 4, F64, "[-1, 7]");
    }
    ok(OP("softmax", "X=x", "Out=sm"));
    is("sm", F64, "[-1, 7]");
    FlOpDesc *op = OP("softmax", "X=x", "Out=sm");
    fl_ir_op_set_int(op, "axis", 2);
    err(op, "softmax: axis 2 is out of range for [-1, 7]");
}

static void test_losses(void) {
    V("p", F32, "-1,10");
    V("label", I64, "-1,1");
    ok(OP("cross_entropy", "X=p Label=label", "Y=ce"));
    is("ce", F32, "[-1, 1]");
    V("lf", F32, "-1,1");
    err(OP("cross_entropy", "X=p Label=lf", "Y=ce"),
        "cross_entropy: the label must be int64, found float32");
    V("l3", I64, "-1,3");
    err(OP("cross_entropy", "X=p Label=l3", "Y=ce"),
        "cross_entropy: the label must have shape [N, 1] for the input X [-1, 10], found [-1, 3]");
    V("p32", F32, "32,10");
    V("l64", I64, "64,1");
    err(OP("cross_entropy", "X=p32 Label=l64", "Y=ce"),
        "cross_entropy: the input has 32 rows but the label has 64 (X [32, 10], Label [64, 1])");
    ok(OP("cross_entropy", "X=p32 Label=label", "Y=ce"));
    is("ce", F32, "[32, 1]");
    V("soft", F32, "-1,10");
    FlOpDesc *op = OP("cross_entropy", "X=p Label=soft", "Y=ce");
    fl_ir_op_set_bool(op, "soft_label", true);
    ok(op);
    is("ce", F32, "[-1, 1]");

    ok(OP("mean", "X=p", "Out=m"));
    is("m", F32, "[1]");
    V("x3", F32, "-1,4,5");
    op = OP("reduce_sum", "X=x3", "Out=r");
    ints(op, "dim", "1");
    ok(op);
    is("r", F32, "[-1, 5]");
    op = OP("reduce_mean", "X=x3", "Out=r");
    ints(op, "dim", "-1");
    fl_ir_op_set_bool(op, "keep_dim", true);
    ok(op);
    is("r", F32, "[-1, 4, 1]");
    op = OP("reduce_sum", "X=x3", "Out=r");
    fl_ir_op_set_bool(op, "reduce_all", true);
    ok(op);
    is("r", F32, "[1]");
    ok(OP("reduce_sum", "X=x3", "Out=r")); /* default dim [0] */
    is("r", F32, "[4, 5]");
    op = OP("reduce_sum", "X=x3", "Out=r");
    ints(op, "dim", "3");
    err(op, "reduce_sum: axis 3 is out of range for [-1, 4, 5]");

    V("s1", F32, "-1,3");
    V("s2", F32, "8,3");
    V("s3", F32, "-1,4");
    ok(OP("sum", "X=s1,s2,s1", "Out=sum"));
    is("sum", F32, "[8, 3]");
    err(OP("sum", "X=s1,s3", "Out=sum"), "sum: inputs differ in shape ([-1, 3] and [-1, 4])");
    err(OP("sum", "X=", "Out=sum"), "sum: no inputs to add");
}

static void test_shape_ops(void) {
    V("a", F32, "-1,3");
    V("b", F32, "-1,4");
    FlOpDesc *op = OP("concat", "X=a,b", "Out=c");
    fl_ir_op_set_int(op, "axis", 1);
    ok(op);
    is("c", F32, "[-1, 7]");
    err(OP("concat", "X=a,b", "Out=c"), "concat: inputs differ in dim 1 ([-1, 3] and [-1, 4])");
    V("k", F32, "5,3");
    ok(OP("concat", "X=a,k", "Out=c"));
    is("c", F32, "[-1, 3]");
    V("m", F32, "2,3");
    ok(OP("concat", "X=k,m", "Out=c"));
    is("c", F32, "[7, 3]");
    V("r3", F32, "2,3,1");
    err(OP("concat", "X=m,r3", "Out=c"), "concat: inputs differ in rank ([2, 3] and [2, 3, 1])");

    V("x", F32, "-1,10");
    op = OP("split", "X=x", "Out=p1,p2");
    fl_ir_op_set_int(op, "axis", 1);
    ok(op);
    is("p1", F32, "[-1, 5]");
    is("p2", F32, "[-1, 5]");
    op = OP("split", "X=x", "Out=q1,q2");
    fl_ir_op_set_int(op, "axis", 1);
    ints(op, "sections", "3,-1");
    ok(op);
    is("q1", F32, "[-1, 3]");
    is("q2", F32, "[-1, 7]");
    op = OP("split", "X=x", "Out=p1,p2,p3");
    fl_ir_op_set_int(op, "axis", 1);
    err(op, "split: dim 1 of size 10 cannot be split into 3 equal parts (X [-1, 10])");
    op = OP("split", "X=x", "Out=p1,p2");
    fl_ir_op_set_int(op, "axis", 1);
    fl_ir_op_set_int(op, "num", 5);
    err(op, "split: num is 5 but there are 2 outputs");
    op = OP("split", "X=x", "Out=p1,p2");
    fl_ir_op_set_int(op, "axis", 1);
    ints(op, "sections", "3,4");
    err(op, "split: sections add up to 7 but dim 1 has size 10 (X [-1, 10])");
    op = OP("split", "X=x", "Out=p1,p2"); /* along the unknown batch dim */
    ok(op);
    is("p1", F32, "[-1, 10]");

    V("x13", F32, "-1,13");
    op = OP("reshape", "X=x13", "Out=r");
    ints(op, "shape", "0,-1");
    ok(op);
    is("r", F32, "[-1, 13]");
    V("x234", F32, "2,3,4");
    op = OP("reshape", "X=x234", "Out=r");
    ints(op, "shape", "-1,4");
    ok(op);
    is("r", F32, "[6, 4]");
    V("x23", F32, "2,3");
    op = OP("reshape", "X=x23", "Out=r");
    ints(op, "shape", "4,2");
    err(op, "reshape: cannot reshape X [2, 3] (6 elements) into [4, 2] (8)");
    V("xb", F32, "-1,4,3");
    op = OP("reshape", "X=xb", "Out=r");
    ints(op, "shape", "-1,12");
    ok(op);
    is("r", F32, "[-1, 12]");
    op = OP("reshape", "X=xb", "Out=r");
    ints(op, "shape", "0,-1");
    ok(op);
    is("r", F32, "[-1, 12]");
    op = OP("reshape", "X=xb", "Out=r");
    ints(op, "shape", "0,5");
    err(op, "reshape: cannot reshape X [-1, 4, 3] (12 x batch elements) into [-1, 5] (5 x batch)");
    op = OP("reshape", "X=x23", "Out=r");
    ints(op, "shape", "-1,-1");
    err(op, "reshape: the new shape may hold one -1, found two");
    op = OP("reshape", "X=x23", "Out=r");
    ints(op, "shape", "-1,4");
    err(op, "reshape: cannot reshape X [2, 3] into [-1, 4]");

    op = OP("transpose", "X=x234", "Out=t");
    ints(op, "axis", "2,0,1");
    ok(op);
    is("t", F32, "[4, 2, 3]");
    op = OP("transpose", "X=x234", "Out=t");
    ints(op, "axis", "0,0,1");
    err(op, "transpose: axis [0, 0, 1] is not a permutation of the 3 dims of X [2, 3, 4]");
}

static void test_classification(void) {
    V("p", F32, "-1,10");
    ok(OP("argmax", "X=p", "Out=am"));
    is("am", I64, "[-1]");
    FlOpDesc *op = OP("top_k", "X=p", "Out=tv Indices=ti");
    fl_ir_op_set_int(op, "k", 3);
    ok(op);
    is("tv", F32, "[-1, 3]");
    is("ti", I64, "[-1, 3]");
    op = OP("top_k", "X=p", "Out=tv Indices=ti");
    fl_ir_op_set_int(op, "k", 11);
    err(op, "top_k: k is 11 but the input's last dim has size 10 (X [-1, 10])");
    V("label", I64, "-1,1");
    ok(OP("accuracy", "Out=tv Indices=ti Label=label", "Accuracy=acc Correct=cor Total=tot"));
    is("acc", F32, "[1]");
    is("cor", I64, "[1]");
    is("tot", I64, "[1]");
    V("lf", F32, "-1,1");
    err(OP("accuracy", "Out=tv Indices=ti Label=lf", "Accuracy=acc Correct=cor Total=tot"),
        "accuracy: the label must be int64, found float32");
}

static void test_conv_pool(void) {
    V("img", F32, "-1,3,28,28");
    V("f", F32, "6,3,5,5");
    ok(OP("conv2d", "Input=img Filter=f", "Output=c"));
    is("c", F32, "[-1, 6, 24, 24]");
    FlOpDesc *op = OP("conv2d", "Input=img Filter=f", "Output=c");
    ints(op, "paddings", "2,2");
    ok(op);
    is("c", F32, "[-1, 6, 28, 28]");
    op = OP("conv2d", "Input=img Filter=f", "Output=c");
    ints(op, "strides", "2,2");
    ints(op, "dilations", "2,2");
    ok(op);
    is("c", F32, "[-1, 6, 10, 10]"); /* (28 - 9) / 2 + 1 */
    V("f4", F32, "6,4,5,5");
    err(OP("conv2d", "Input=img Filter=f4", "Output=c"),
        "conv2d: the input has 3 channels but the filter expects 4 (groups 1) "
        "(Input [-1, 3, 28, 28], Filter [6, 4, 5, 5])");
    V("img6", F32, "-1,6,8,8");
    V("fg", F32, "4,2,3,3");
    op = OP("conv2d", "Input=img6 Filter=fg", "Output=c");
    fl_ir_op_set_int(op, "groups", 3);
    err(op, "conv2d: 4 filters cannot be divided into 3 groups");
    V("fg6", F32, "6,2,3,3");
    op = OP("conv2d", "Input=img6 Filter=fg6", "Output=c");
    fl_ir_op_set_int(op, "groups", 3);
    ok(op);
    is("c", F32, "[-1, 6, 6, 6]");
    V("tiny", F32, "1,3,3,3");
    err(OP("conv2d", "Input=tiny Filter=f", "Output=c"),
        "conv2d: the output would be empty: input [1, 3, 3, 3], filter [6, 3, 5, 5], stride 1, "
        "padding 0, dilation 1");
    V("flat", F32, "-1,784");
    err(OP("conv2d", "Input=flat Filter=f", "Output=c"),
        "conv2d: the input must be 4-D (N, C, H, W), found [-1, 784]");
    V("hw", F32, "-1,3,-1,-1");
    ok(OP("conv2d", "Input=hw Filter=f", "Output=c"));
    is("c", F32, "[-1, 6, -1, -1]");

    V("x", F32, "-1,6,24,24");
    op = OP("pool2d", "X=x", "Out=pl");
    ints(op, "ksize", "2,2");
    ints(op, "strides", "2,2");
    ok(op);
    is("pl", F32, "[-1, 6, 12, 12]");
    op = OP("pool2d", "X=x", "Out=pl");
    fl_ir_op_set_bool(op, "global_pooling", true);
    ok(op);
    is("pl", F32, "[-1, 6, 1, 1]");
    op = OP("pool2d", "X=x", "Out=pl");
    ints(op, "ksize", "2,2");
    fl_ir_op_set_string(op, "pooling_type", "min");
    err(op, "pool2d: pooling_type must be 'max' or 'avg', found 'min'");
    op = OP("pool2d", "X=x", "Out=pl");
    ints(op, "ksize", "2");
    err(op, "pool2d: ksize must hold 2 values (height, width), found 1");
}

static void test_norm_dropout(void) {
    V("x", F32, "-1,16,8,8");
    V("sc", F32, "16");
    V("bi", F32, "16");
    V("mu", F32, "16");
    V("va", F32, "16");
    ok(OP("batch_norm", "X=x Scale=sc Bias=bi Mean=mu Variance=va",
          "Y=y MeanOut=mu VarianceOut=va SavedMean=sm SavedVariance=sv"));
    is("y", F32, "[-1, 16, 8, 8]");
    is("mu", F32, "[16]");
    is("sv", F32, "[16]");
    V("sc8", F32, "8");
    err(OP("batch_norm", "X=x Scale=sc8 Bias=bi Mean=mu Variance=va",
           "Y=y MeanOut=mu VarianceOut=va SavedMean=sm SavedVariance=sv"),
        "batch_norm: the input has 16 channels but Scale has shape [8]");
    ok(OP("dropout", "X=x", "Out=d Mask=dm"));
    is("d", F32, "[-1, 16, 8, 8]");
    is("dm", F32, "[-1, 16, 8, 8]");
}

static void test_compare_logic(void) {
    V("a", F32, "-1,1");
    V("b", F32, "1");
    static const char *const cmp[] = {"less_than", "less_equal", "greater_than",
                                      "greater_equal", "equal", "not_equal"};
    for (size_t i = 0; i < FL_ARRAY_LEN(cmp); i++) {
        ok(OP(cmp[i], "X=a Y=b", "Out=c"));
        is("c", BOOL, "[-1, 1]");
    }
    V("i", I64, "1");
    err(OP("less_than", "X=a Y=i", "Out=c"), "dtype mismatch: float32 and int64");
    V("t", BOOL, "-1,1");
    V("u", BOOL, "1");
    ok(OP("logical_and", "X=t Y=u", "Out=l"));
    is("l", BOOL, "[-1, 1]");
    ok(OP("logical_or", "X=t Y=u", "Out=l"));
    ok(OP("logical_not", "X=t", "Out=l"));
    is("l", BOOL, "[-1, 1]");
    err(OP("logical_and", "X=t Y=a", "Out=l"), "logical_and: operands must be bool, found float32");

    V("cnt", I64, "1");
    ok(OP("increment", "X=cnt", "Out=cnt"));
    is("cnt", I64, "[1]");
    V("big", I64, "3");
    err(OP("increment", "X=big", "Out=big"), "increment: X must have one element, found shape [3]");
    ok(OP("Print", "In=a", "Out=pa"));
    is("pa", F32, "[-1, 1]");
    ok(OP("Print", "In=a", "")); /* no Out */
}

static void test_optimizers(void) {
    V("w", F32, "13,1");
    V("w@GRAD", F32, "13,1");
    V("lr", F32, "1");
    V("vel", F32, "13,1");
    V("m1", F32, "13,1");
    V("m2", F32, "13,1");
    V("b1p", F32, "1");
    V("b2p", F32, "1");
    ok(OP("sgd", "Param=w Grad=w@GRAD LearningRate=lr", "ParamOut=w"));
    is("w", F32, "[13, 1]");
    ok(OP("momentum", "Param=w Grad=w@GRAD Velocity=vel LearningRate=lr",
          "ParamOut=w VelocityOut=vel"));
    ok(OP("adam",
          "Param=w Grad=w@GRAD LearningRate=lr Moment1=m1 Moment2=m2 Beta1Pow=b1p Beta2Pow=b2p",
          "ParamOut=w Moment1Out=m1 Moment2Out=m2 Beta1PowOut=b1p Beta2PowOut=b2p"));
    is("b1p", F32, "[1]");
    is("m2", F32, "[13, 1]");
    V("g2", F32, "12,1");
    err(OP("sgd", "Param=w Grad=g2 LearningRate=lr", "ParamOut=w"),
        "sgd: the gradient [12, 1] of 'w' does not match the parameter's shape [13, 1]");
}

static void test_control_dist(void) {
    /* nothing to infer: never an error, even with undeclared vars */
    static const char *const ops[] = {"conditional_block", "while",        "parallel_for",
                                      "go",                "channel_create", "channel_send",
                                      "channel_recv",      "channel_close",  "select",
                                      "split_to_chan",     "chan_concat",    "send",
                                      "recv",              "send_barrier",   "fetch_barrier",
                                      "listen_and_serv"};
    for (size_t i = 0; i < FL_ARRAY_LEN(ops); i++) {
        FlOpDesc *op = fl_ir_op_append(B, ops[i]);
        fl_ir_op_add_input(op, "X", "undeclared");
        ok(op);
    }
    V("e0", F32, "-1,3");
    V("e1", F32, "-1,3");
    V("e2", F32, "-1,4");
    V("idx", I64, "1");
    ok(OP("list_index", "X=e0,e1 Index=idx", "Out=pick"));
    is("pick", F32, "[-1, 3]");
    err(OP("list_index", "X=e0,e2 Index=idx", "Out=pick"),
        "list_index: list elements differ ([-1, 3] float32 and [-1, 4] float32)");
}

static void test_grad_ops(void) {
    V("x", F32, "-1,13");
    V("w", F32, "13,1");
    V("h", F32, "-1,1");
    V("h@GRAD", F32, "-1,1");
    ok(OP("mul_grad", "X=x Y=w Out=h Out@GRAD=h@GRAD", "X@GRAD=x@GRAD Y@GRAD=w@GRAD"));
    is("x@GRAD", F32, "[-1, 13]");
    is("w@GRAD", F32, "[13, 1]");
    V("a", F64, "2,3");
    V("b", F64, "2,3");
    V("s", F64, "2,3");
    V("s@GRAD", F64, "2,3");
    ok(OP("sum_grad", "X=a,b Out=s Out@GRAD=s@GRAD", "X@GRAD=@EMPTY@,b@GRAD"));
    is("b@GRAD", F64, "[2, 3]");
    V("d@GRAD", F32, "-1,13");
    V("m", F32, "-1,13");
    ok(OP("dropout_grad", "Mask=m Out@GRAD=d@GRAD", "X@GRAD=dx@GRAD"));
    is("dx@GRAD", F32, "[-1, 13]");
    err(OP("mul_grad", "X=x Y=w Out=h Out@GRAD=h@GRAD", "X@GRAD=x@GRAD,x2@GRAD"),
        "mul_grad: output X@GRAD has 2 vars but input X has 1");
    err(OP("mul_grad", "X=nope Y=w Out=h Out@GRAD=h@GRAD", "X@GRAD=x@GRAD"),
        "mul_grad: input X names undeclared var 'nope'");
}

/* The layers of the parametrised activations, batch-size fills, reductions and indexing. */
static void test_layers(void) {
    V("x", F32, "-1,3,4");
    V("xi", I64, "-1,3");
    static const char *const acts[] = {"leaky_relu", "elu", "relu6", "swish", "hard_sigmoid", "brelu",
                                       "soft_relu", "softsign", "pow", "clip_by_norm"};
    for (size_t i = 0; i < FL_ARRAY_LEN(acts); i++) {
        FlOpDesc *op = OP(acts[i], "X=x", "Out=a");
        if (i == FL_ARRAY_LEN(acts) - 1) fl_ir_op_set_float(op, "max_norm", 1);
        ok(op);
        is("a", F32, "[-1, 3, 4]");
    }
    err(OP("elu", "X=xi", "Out=a"), "elu: X must be float32 or float64, found int64");
    FlOpDesc *op = OP("clip", "X=x", "Out=a");
    fl_ir_op_set_float(op, "min", 1);
    fl_ir_op_set_float(op, "max", 0.5);
    err(op, "clip: min 1 is above max 0.5");
    err(OP("clip_by_norm", "X=x", "Out=a"), "clip_by_norm: max_norm must be > 0, found 0");

    V("al", F32, "1,3,1,1");
    op = OP("prelu", "X=x Alpha=al", "Out=p");
    fl_ir_op_set_string(op, "mode", "channel");
    ok(op);
    is("p", F32, "[-1, 3, 4]");
    fl_ir_op_set_string(op, "mode", "element");
    err(op, "prelu: mode 'element' needs 12 alpha values for X [-1, 3, 4], found Alpha [1, 3, 1, 1]");
    fl_ir_op_set_string(op, "mode", "rows");
    err(op, "prelu: mode must be 'all', 'channel' or 'element', found 'rows'");

    op = OP("fill_constant_batch_size_like", "Input=x", "Out=f");
    ints(op, "shape", "7,-1,2");
    fl_ir_op_set_int(op, "output_dim_idx", 1);
    fl_ir_op_set_int(op, "dtype", I64);
    ok(op);
    is("f", I64, "[7, -1, 2]");
    fl_ir_op_set_int(op, "input_dim_idx", 1);
    ok(op);
    is("f", I64, "[7, 3, 2]");
    fl_ir_op_set_int(op, "input_dim_idx", 3);
    err(op, "fill_constant_batch_size_like: input_dim_idx 3 is not a dim of the input [-1, 3, 4]");
    op = OP("uniform_random_batch_size_like", "Input=x", "Out=u");
    ints(op, "shape", "-1,5");
    ok(op);
    is("u", F32, "[-1, 5]");
    fl_ir_op_set_int(op, "dtype", I64);
    err(op, "uniform_random_batch_size_like: dtype must be float32 or float64, found int64");

    op = OP("reduce_max", "X=x", "Out=r");
    ints(op, "dim", "-1");
    ok(op);
    is("r", F32, "[-1, 3]");
    op = OP("reduce_prod", "X=x", "Out=r");
    fl_ir_op_set_bool(op, "reduce_all", true);
    ok(op);
    is("r", F32, "[1]");

    op = OP("slice", "Input=x", "Out=s");
    ints(op, "axes", "1,2");
    ints(op, "starts", "1,-3");
    ints(op, "ends", "100,-1");
    ok(op);
    is("s", F32, "[-1, 2, 2]");
    ints(op, "ends", "100");
    err(op, "slice: axes, starts and ends must have one length, found 2, 2 and 1");
    ints(op, "ends", "100,1");
    err(op, "slice: the slice [-3:1] of dim 2 (size 4) is empty");
    ints(op, "axes", "0,0");
    ints(op, "ends", "5,5");
    err(op, "slice: axis 0 is listed twice");

    V("tab", F32, "10,4");
    V("idx", I64, "5,1");
    ok(OP("gather", "X=tab Index=idx", "Out=g"));
    is("g", F32, "[5, 4]");
    V("idf", F32, "5");
    err(OP("gather", "X=tab Index=idf", "Out=g"), "gather: Index must be int32 or int64, found float32");
    V("upd", F32, "5,4");
    ok(OP("scatter", "X=tab Ids=idx Updates=upd", "Out=sc"));
    is("sc", F32, "[10, 4]");
    V("upd3", F32, "5,3");
    err(OP("scatter", "X=tab Ids=idx Updates=upd3", "Out=sc"),
        "scatter: Updates must have shape [5, 4] (one row per id, X [10, 4]), found [5, 3]");

    op = OP("expand", "X=x", "Out=e");
    ints(op, "expand_times", "2,1,3");
    ok(op);
    is("e", F32, "[-1, 3, 12]");
    ints(op, "expand_times", "2,1");
    err(op, "expand: expand_times has 2 values but X [-1, 3, 4] has 3 dims");

    V("y", F32, "-1,1,4,1");
    op = OP("squeeze", "X=y", "Out=q");
    ok(op);
    is("q", F32, "[-1, 4]");
    ints(op, "axes", "-1");
    ok(op);
    is("q", F32, "[-1, 1, 4]");
    ints(op, "axes", "2");
    err(op, "squeeze: dim 2 of X [-1, 1, 4, 1] has size 4; only a size-1 dim can be squeezed");
    op = OP("unsqueeze", "X=x", "Out=uq");
    ints(op, "axes", "0,-1");
    ok(op);
    is("uq", F32, "[1, -1, 3, 4, 1]");
    ints(op, "axes", "6");
    err(op, "unsqueeze: axis 6 is out of range for a result of rank 4");
    op = OP("flatten", "X=x", "Out=fl");
    fl_ir_op_set_int(op, "axis", 2);
    ok(op);
    is("fl", F32, "[-1, 4]");
    fl_ir_op_set_int(op, "axis", 0);
    ok(op);
    is("fl", F32, "[1, -1]");

    V("x2", F32, "-1,3,4");
    op = OP("stack", "X=x,x2", "Y=st");
    fl_ir_op_set_int(op, "axis", -1);
    ok(op);
    is("st", F32, "[-1, 3, 4, 2]");
    err(OP("stack", "X=x,tab", "Y=st"), "stack: inputs differ in shape ([-1, 3, 4] and [10, 4])");
    op = OP("unstack", "X=x", "Y=u0,u1,u2");
    fl_ir_op_set_int(op, "axis", 1);
    ok(op);
    is("u2", F32, "[-1, 4]");
    fl_ir_op_set_int(op, "num", 2);
    err(op, "unstack: num is 2 but dim 1 of X [-1, 3, 4] has size 3");
    op = OP("unstack", "X=x", "Y=u0");
    err(op, "unstack: dim 0 of X [-1, 3, 4] is unknown: give num");

    op = OP("pad", "X=x", "Out=pd");
    ints(op, "paddings", "0,0,1,2,0,3");
    ok(op);
    is("pd", F32, "[-1, 6, 7]");
    ints(op, "paddings", "0,0,1,2");
    err(op, "pad: paddings must hold 2 values per dim of X [-1, 3, 4] (6), found 4");
    op = OP("crop", "X=tab", "Out=cr");
    ints(op, "shape", "3,-1");
    ints(op, "offsets", "2,1");
    ok(op);
    is("cr", F32, "[3, 3]");
    ints(op, "offsets", "8,1");
    err(op, "crop: a block of size 3 at offset 8 does not fit in dim 0 of X [10, 4]");
    V("ref", F32, "2,2");
    ok(OP("crop", "X=tab Y=ref", "Out=cr"));
    is("cr", F32, "[2, 2]");

    op = OP("one_hot", "X=idx", "Out=oh");
    fl_ir_op_set_int(op, "depth", 7);
    ok(op);
    is("oh", F32, "[5, 7]");
    err(OP("one_hot", "X=tab", "Out=oh"), "one_hot: X must be int32 or int64, found float32");
}

static void test_every_op_has_rule(void) {
    /* every op (forward and gradient) goes through fl_infer_op without crashing, even when
     * empty; the result does not matter here */
    for (size_t i = 0; i < fl_ops_count(); i++) {
        FlOpDesc *op = fl_ir_op_append(B, fl_ops_at(i)->name);
        FlErr e;
        if (fl_infer_op(P, B, op, &e)) continue;
    }
    FlErr e = {{0}};
    CU_ASSERT_EQUAL(fl_infer_op(P, B, fl_ir_op_append(B, "frobnicate"), &e), FL_ERROR);
    CHECK_STR(e.msg, "unknown op 'frobnicate'");
}

static void test_program(void) {
    FlProgram *p = fl_ir_program_new();
    FlBlock *b0 = fl_ir_block(p, 0);
    FlVarDesc *x = fl_ir_var_add(b0, "x");
    int64_t xs[] = {-1, 13}, ws[] = {13, 4}, bs[] = {4};
    fl_ir_var_set_shape(x, 2, xs);
    fl_ir_var_set_shape(fl_ir_var_add(b0, "w"), 2, ws);
    fl_ir_var_set_shape(fl_ir_var_add(b0, "b"), 1, bs);
    fl_ir_var_add(b0, "h");
    fl_ir_var_add(b0, "o");
    fl_ir_var_add(b0, "cond");
    FlOpDesc *op = fl_ir_op_append(b0, "mul");
    fl_ir_op_add_input(op, "X", "x");
    fl_ir_op_add_input(op, "Y", "w");
    fl_ir_op_add_output(op, "Out", "h");
    /* a sub-block reads h, and its op comes before an op of block 0 that uses its result */
    FlBlock *b1 = fl_ir_block_new(p, 0);
    fl_ir_var_add(b1, "inner");
    FlOpDesc *in = fl_ir_op_append(b1, "relu");
    fl_ir_op_add_input(in, "X", "h");
    fl_ir_op_add_output(in, "Out", "inner");
    FlOpDesc *cb = fl_ir_op_append(b0, "conditional_block");
    fl_ir_op_add_input(cb, "Cond", "cond");
    fl_ir_op_set_block(cb, "sub_block", 1);
    FlOpDesc *add = fl_ir_op_append(b0, "elementwise_add");
    fl_ir_op_add_input(add, "X", "h");
    fl_ir_op_add_input(add, "Y", "b");
    fl_ir_op_add_output(add, "Out", "o");
    add->loc = (FlLoc){0, 7, 3, 1};
    FlErr e = {{0}};
    FlLoc where = FL_LOC_NONE;
    CU_ASSERT_EQUAL(fl_infer_program(p, &e, &where), FL_OK);
    FlBuf s = {0};
    FlVarDesc *o = fl_ir_var_find(b0, "o"), *inner = fl_ir_var_find(b1, "inner");
    fl_ir_shape_str(o->ndim, o->shape, &s);
    CHECK_STR(fl_buf_str(&s), "[-1, 4]");
    s.len = 0;
    fl_ir_shape_str(inner->ndim, inner->shape, &s);
    CHECK_STR(fl_buf_str(&s), "[-1, 4]");
    fl_buf_free(&s);
    /* now break the add: its loc is reported */
    int64_t bad[] = {5};
    fl_ir_var_set_shape(fl_ir_var_find(b0, "b"), 1, bad);
    CU_ASSERT_EQUAL(fl_infer_program(p, &e, &where), FL_ERROR);
    CHECK_STR(e.msg, "elementwise_add: shapes [-1, 4] and [5] cannot be broadcast");
    CU_ASSERT_EQUAL(where.line, 7);
    CU_ASSERT_EQUAL(where.col, 3);
    fl_ir_program_free(p);
}

#include "tests/compiler/infer_nn2.inc"
#include "tests/compiler/infer_crf.inc"
#include "tests/compiler/infer_seqnlp.inc"

static void test_sequences(void) {
    V("sx", F32, "-1,3");
    V("sx3", F64, "-1,2,4");
    V("soff", I64, "-1");
    V("sf", F32, "9,5");
    V("sn", I64, "2,3");
    /* sequence_pool: one row per sequence; MaxIndex int32 of Out's shape */
    FlOpDesc *op = OP("sequence_pool", "X=sx3 XLod=soff", "Out=sp MaxIndex=spi");
    fl_ir_op_set_string(op, "pooltype", "MAX");
    ok(op);
    is("sp", F64, "[-1, 2, 4]");
    is("spi", I32, "[-1, 2, 4]");
    /* AVERAGE by default: MaxIndex is MAX's alone */
    err(OP("sequence_pool", "X=sx XLod=soff", "Out=sp2 MaxIndex=spi2"),
        "sequence_pool: MaxIndex is made by pooltype MAX only, found 'AVERAGE'");
    op = OP("sequence_pool", "X=sx XLod=soff", "Out=sp3");
    fl_ir_op_set_string(op, "pooltype", "MEAN");
    err(op, "sequence_pool: pooltype must be AVERAGE, SUM, SQRT, MAX, LAST or FIRST, found 'MEAN'");
    err(OP("sequence_pool", "X=sx XLod=sf", "Out=sp4"),
        "sequence_pool: XLod must be the int64 offsets [nseq + 1] of a LoD tensor, found float32 [9, 5]");
    err(OP("sequence_pool", "X=sn XLod=soff", "Out=sp5"), "sequence_pool: X must be float32 or float64, found int64");
    /* sequence_softmax: [T] or [T, 1] */
    V("sc", F32, "-1,1");
    ok(OP("sequence_softmax", "X=sc XLod=soff", "Out=ss"));
    is("ss", F32, "[-1, 1]");
    err(OP("sequence_softmax", "X=sx XLod=soff", "Out=ss2"), "sequence_softmax: X must be [T] or [T, 1], found [-1, 3]");
    /* sequence_conv: [T, N] */
    op = OP("sequence_conv", "X=sx XLod=soff Filter=sf", "Out=sv");
    fl_ir_op_set_int(op, "contextLength", 3);
    ok(op);
    is("sv", F32, "[-1, 5]");
    op = OP("sequence_conv", "X=sx XLod=soff Filter=sf", "Out=sv2");
    fl_ir_op_set_int(op, "contextLength", 2);
    err(op, "sequence_conv: Filter must be float32 [contextLength * D, N] for X [-1, 3], found float32 [9, 5]");
    op = OP("sequence_conv", "X=sx XLod=soff Filter=sf", "Out=sv3");
    fl_ir_op_set_int(op, "contextLength", 3);
    fl_ir_op_set_int(op, "contextStride", 2);
    err(op, "sequence_conv: contextStride must be 1, found 2");
    /* sequence_expand(_as): unknown rows; OutLod int64 [-1] */
    V("sd", I64, "4,7");
    ok(OP("sequence_expand", "X=sd XLod=soff YLod=soff", "Out=se OutLod=sel"));
    is("se", I64, "[-1, 7]");
    is("sel", I64, "[-1]");
    ok(OP("sequence_expand_as", "X=sx YLod=soff", "Out=sea"));
    is("sea", F32, "[-1, 3]");
    /* sequence_mask: X's dims + [maxlen] */
    op = OP("sequence_mask", "X=sn", "Y=sm");
    fl_ir_op_set_int(op, "maxlen", 6);
    fl_ir_op_set_int(op, "out_dtype", F32);
    ok(op);
    is("sm", F32, "[2, 3, 6]");
    ok(OP("sequence_mask", "X=sn", "Y=sm2"));
    is("sm2", I64, "[2, 3, -1]");
    err(OP("sequence_mask", "X=sx", "Y=sm3"), "sequence_mask: X must be int32 or int64, found float32");
}

/* The sequence reshaping ops: rows known at run time only, offsets int64 vectors. */
static void test_seqshape(void) {
    V("sx", F32, "20,4");
    V("sy", F32, "5,4");
    V("sl", I64, "-1");
    V("sl2", I64, "-1");
    V("bad_lod", I32, "-1");
    FlOpDesc *op = OP("sequence_concat", "X=sx,sy XLod=sl,sl2", "Out=c OutLod=cl");
    ok(op);
    is("c", F32, "[25, 4]");
    is("cl", I64, "[-1]");
    op = OP("sequence_concat", "X=sx,sy XLod=sl", "Out=c OutLod=cl");
    err(op, "sequence_concat: 2 inputs X but 1 offsets XLod");
    op = OP("sequence_reshape", "X=sx XLod=sl", "Out=r OutLod=rl");
    fl_ir_op_set_int(op, "new_dim", 8);
    ok(op);
    is("r", F32, "[10, 8]");
    fl_ir_op_set_int(op, "new_dim", 0);
    err(op, "sequence_reshape: new_dim must be >= 1, found 0");
    op = OP("sequence_reshape", "X=sx XLod=bad_lod", "Out=r OutLod=rl");
    fl_ir_op_set_int(op, "new_dim", 8);
    err(op, "sequence_reshape: XLod 'bad_lod' must be an int64 vector of offsets, found int32 [-1]");
    V("so", I64, "-1,1");
    op = OP("sequence_slice", "X=sx XLod=sl Offset=so Length=so", "Out=s OutLod=slo");
    ok(op);
    is("s", F32, "[-1, 4]");
    V("pv", F32, "1");
    op = OP("sequence_pad", "X=sx PadValue=pv XLod=sl", "Out=p Length=pl");
    fl_ir_op_set_int(op, "padded_length", 17);
    ok(op);
    is("p", F32, "[-1, 17, 4]");
    is("pl", I64, "[-1]");
    V("pv64", F64, "1");
    op = OP("sequence_pad", "X=sx PadValue=pv64 XLod=sl", "Out=p Length=pl");
    err(op, "sequence_pad: PadValue is float64 but X is float32");
    V("padded", F32, "-1,17,4");
    op = OP("sequence_unpad", "X=padded Length=pl", "Out=u OutLod=ul");
    ok(op);
    is("u", F32, "[-1, 4]");
    V("padded2", F32, "-1,17");
    op = OP("sequence_unpad", "X=padded2 Length=pl", "Out=u OutLod=ul");
    ok(op);
    is("u", F32, "[-1, 1]");
    V("ids", I64, "20,1");
    op = OP("sequence_enumerate", "X=ids XLod=sl", "Out=e");
    fl_ir_op_set_int(op, "win_size", 3);
    ok(op);
    is("e", I64, "[20, 3]");
    op = OP("sequence_enumerate", "X=sx XLod=sl", "Out=e");
    fl_ir_op_set_int(op, "win_size", 3);
    err(op, "sequence_enumerate: X must be int32 or int64, found float32");
    op = OP("lod_reset", "X=sx TargetLod=sl", "Out=lr");
    ok(op);
    is("lr", F32, "[20, 4]");
    /* a LoD Input's batch size is its number of sequences: unknown until run time */
    op = OP("fill_constant_batch_size_like", "Input=sx InputLod=sl", "Out=f");
    ints(op, "shape", "-1,2");
    ok(op);
    is("f", F32, "[-1, 2]");
    fl_ir_op_set_int(op, "input_dim_idx", 1);
    ok(op);
    is("f", F32, "[4, 2]");
}

int main(void) {
    static const FlTestCase cases[] = {
        {"fill, random, copies", test_fill},
        {"mul", test_mul},
        {"lookup_table", test_lookup_table},
        {"matmul", test_matmul},
        {"elementwise broadcasting", test_elementwise},
        {"unary, softmax", test_unary},
        {"losses and reductions", test_losses},
        {"concat, split, reshape, transpose", test_shape_ops},
        {"argmax, top_k, accuracy", test_classification},
        {"conv2d, pool2d", test_conv_pool},
        {"batch_norm, dropout", test_norm_dropout},
        {"layer_norm, fused losses, lrn, conv2d_transpose, interpolation", test_nn2_layers},
        {"comparisons, logic, increment, Print", test_compare_logic},
        {"linear_chain_crf, crf_decoding, chunk_eval", test_crf_ops},
        {"CTC and edit distance", test_ctc_ops},
        {"optimizers", test_optimizers},
        {"control, channels, dist, list_index", test_control_dist},
        {"layers: activations, batch-size fills, indexing, padding", test_layers},
        {"sequences", test_sequences},
        {"gradient ops", test_grad_ops},
        {"sequence reshaping", test_seqshape},
        {"every op has a rule", test_every_op_has_rule},
        {"fl_infer_program", test_program},
    };
    return fl_test_run("infer", setup, teardown, cases, sizeof cases / sizeof cases[0]);
}
