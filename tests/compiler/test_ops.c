/* test_ops.c: the op table (compiler/ops.c): every ops.def line parsed, gradient ops derived,
 * lookups, fl_ops_check's messages, default attributes, thread-safe first use, and
 * docs/ops.md equal to fl_ops_markdown's text.
 *
 * With FL_UPDATE_DOCS=1 in the environment the test rewrites docs/ops.md (run from the
 * repository root, as ctest does).
 */
#include <CUnit/Basic.h>
#include "tests/cunit.h"
#include <CUnit/CUnit.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/ops.h"


static void *find_many(void *arg) {
    const FlOpInfo **res = arg;
    for (int i = 0; i < 1000; i++) *res = fl_ops_find("mul_grad");
    return NULL;
}

/* Runs first: several threads race to build the table. */
static void test_first_use_threads(void) {
    pthread_t t[4];
    const FlOpInfo *res[4] = {0};
    for (int i = 0; i < 4; i++) pthread_create(&t[i], NULL, find_many, &res[i]);
    for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
    for (int i = 0; i < 4; i++) CU_ASSERT_PTR_EQUAL(res[i], res[0]);
    CU_ASSERT_PTR_NOT_NULL(res[0]);
}

static void test_every_line(void) {
    static const char *const names[] = {
#define FL_OP(id, ins, outs, attrs, grad, flags, desc) #id,
#include "compiler/ops.def"
#undef FL_OP
    };
    size_t ngrad = 0;
    for (size_t i = 0; i < FL_OPID_COUNT; i++) {
        const FlOpInfo *o = fl_ops_get((FlOpId)i);
        CHECK_STR(o->name, names[i]);
        CU_ASSERT_EQUAL(o->id, (FlOpId)i);
        CU_ASSERT_FALSE(o->is_grad);
        CU_ASSERT_PTR_EQUAL(fl_ops_find(names[i]), o);
        CU_ASSERT_PTR_EQUAL(fl_ops_at(i), o);
        if (strncmp(fl_ops_describe((FlOpId)i), "(no description", 15) == 0)
            fprintf(stderr, "\nop '%s' has no description in compiler/ops.c\n", names[i]);
        CU_ASSERT(strncmp(fl_ops_describe((FlOpId)i), "(no description", 15) != 0);
        char g[128];
        snprintf(g, sizeof g, "%s_grad", names[i]);
        const FlOpInfo *gi = fl_ops_find(g);
        bool has = o->grad == FL_GRAD_DEFAULT || o->grad == FL_GRAD_CUSTOM;
        CU_ASSERT_EQUAL(gi != NULL, has);
        if (gi) {
            ngrad++;
            CU_ASSERT_TRUE(gi->is_grad);
            CU_ASSERT_EQUAL(gi->id, o->id);
            CU_ASSERT_EQUAL(gi->nattrs, o->nattrs);
            for (int k = 0; k < gi->nouts; k++) CU_ASSERT_TRUE(gi->outs[k].optional);
        }
    }
    CU_ASSERT_EQUAL(fl_ops_count(), FL_OPID_COUNT + ngrad);
    CU_ASSERT_PTR_NULL(fl_ops_find("no_such_op"));
    CU_ASSERT_PTR_NULL(fl_ops_find("argmax_grad"));        /* FL_GRAD_NONE */
    CU_ASSERT_PTR_NULL(fl_ops_find("fill_constant_grad")); /* FL_GRAD_STOP */
    CU_ASSERT_PTR_NULL(fl_ops_find("mul_grad_grad"));
}

static void slots_are(const FlSlotInfo *s, int n, const char *expect) {
    char buf[512] = "";
    for (int i = 0; i < n; i++) {
        strcat(buf, i ? " " : "");
        strcat(buf, s[i].name);
        if (s[i].list) strcat(buf, "*");
        if (s[i].optional) strcat(buf, "?");
    }
    CHECK_STR(buf, expect);
}

/* Ops are classified by the table entry they carry, not by their type names. */
static void test_op_of(void) {
    FlProgram *p = fl_ir_program_new();
    FlBlock *b = fl_ir_block(p, 0);
    FlOpDesc *mul = fl_ir_op_append(b, "mul"), *g = fl_ir_op_append(b, "mul_grad"),
             *x = fl_ir_op_append(b, "no_such_op");
    CU_ASSERT_EQUAL(mul->table_idx, 0); /* not looked up yet */
    CU_ASSERT(fl_ops_is(mul, FL_OPID_mul));
    CU_ASSERT(!fl_ops_is(mul, FL_OPID_matmul));
    CU_ASSERT_PTR_EQUAL(fl_ops_of(mul), fl_ops_get(FL_OPID_mul));
    CU_ASSERT(mul->table_idx > 0); /* carried now */
    CU_ASSERT(fl_ops_of(g) && fl_ops_of(g)->is_grad && fl_ops_of(g)->id == FL_OPID_mul);
    CU_ASSERT(!fl_ops_is(g, FL_OPID_mul));
    CU_ASSERT_PTR_NULL(fl_ops_of(x));
    CU_ASSERT_EQUAL(x->table_idx, -1);
    CU_ASSERT_EQUAL(fl_ops_flags(x), 0);
    CU_ASSERT_EQUAL(fl_ops_flags(mul), FL_OPF_LONG | FL_OPF_LOD_KEEP);
    FlOpDesc *c = fl_ir_op_clone(mul);
    CU_ASSERT(fl_ops_is(c, FL_OPID_mul));
    fl_ir_op_free(c);
    fl_ir_program_free(p);
}

static void test_slots(void) {
    const FlOpInfo *mul = fl_ops_find("mul");
    slots_are(mul->ins, mul->nins, "X Y");
    slots_are(mul->outs, mul->nouts, "Out");
    const FlOpInfo *g = fl_ops_find("mul_grad");
    slots_are(g->ins, g->nins, "X Y Out? Out@GRAD?");
    slots_are(g->outs, g->nouts, "X@GRAD? Y@GRAD?");
    CU_ASSERT_PTR_NOT_NULL(fl_ops_attr(g, "x_num_col_dims"));
    g = fl_ops_find("sum_grad");
    slots_are(g->ins, g->nins, "X* Out? Out@GRAD?");
    slots_are(g->outs, g->nouts, "X@GRAD*?");
    g = fl_ops_find("split_grad");
    slots_are(g->ins, g->nins, "X Out*? Out@GRAD*?");
    g = fl_ops_find("batch_norm_grad");
    slots_are(g->ins, g->nins, "X Scale Bias SavedMean SavedVariance Y@GRAD");
    slots_are(g->outs, g->nouts, "X@GRAD? Scale@GRAD? Bias@GRAD?");
    CU_ASSERT_PTR_NOT_NULL(fl_ops_attr(g, "epsilon"));
    g = fl_ops_find("dropout_grad");
    slots_are(g->ins, g->nins, "Mask Out@GRAD");
    slots_are(g->outs, g->nouts, "X@GRAD?");
    const FlOpInfo *ch = fl_ops_find("channel_recv");
    slots_are(ch->outs, ch->nouts, "Out Status?");
    CU_ASSERT_PTR_NOT_NULL(fl_ops_in_slot(mul, "Y"));
    CU_ASSERT_PTR_NULL(fl_ops_in_slot(mul, "Z"));
    CU_ASSERT_PTR_NOT_NULL(fl_ops_out_slot(mul, "Out"));
    CU_ASSERT_PTR_NULL(fl_ops_out_slot(mul, "X"));
    const FlOpInfo *lis = fl_ops_find("listen_and_serv");
    CU_ASSERT_EQUAL(lis->flags, FL_OPF_CONTROL | FL_OPF_SIDE_EFFECT | FL_OPF_DIST);
    CU_ASSERT_EQUAL(fl_ops_find("sgd")->flags, FL_OPF_OPTIMIZE);
    CU_ASSERT_EQUAL(fl_ops_find("batch_norm")->grad, FL_GRAD_CUSTOM);
    CU_ASSERT_EQUAL(fl_ops_find("fill_constant")->grad, FL_GRAD_STOP);
}

static void test_attrs(void) {
    const FlAttrInfo *a = fl_ops_attr(fl_ops_find("fill_constant"), "shape");
    CU_ASSERT_TRUE(a->required);
    CU_ASSERT_EQUAL(a->type, FL_ATTR_INTS);
    a = fl_ops_attr(fl_ops_find("conv2d"), "strides");
    CU_ASSERT_FALSE(a->required);
    CU_ASSERT_EQUAL(a->dflt.n, 2);
    CU_ASSERT_EQUAL(a->dflt.ints[0], 1);
    CU_ASSERT_EQUAL(a->dflt.ints[1], 1);
    a = fl_ops_attr(fl_ops_find("split"), "sections");
    CU_ASSERT_FALSE(a->required);
    CU_ASSERT_EQUAL(a->dflt.n, 0);
    a = fl_ops_attr(fl_ops_find("pool2d"), "pooling_type");
    CHECK_STR(a->dflt.s, "max");
    a = fl_ops_attr(fl_ops_find("Print"), "message");
    CHECK_STR(a->dflt.s, "");
    a = fl_ops_attr(fl_ops_find("batch_norm"), "epsilon");
    CU_ASSERT_DOUBLE_EQUAL(a->dflt.f, 1e-5, 1e-12);
    a = fl_ops_attr(fl_ops_find("scale"), "bias_after_scale");
    CU_ASSERT_EQUAL(a->type, FL_ATTR_BOOL);
    CU_ASSERT_EQUAL(a->dflt.i, 1);
    a = fl_ops_attr(fl_ops_find("elementwise_add"), "axis");
    CU_ASSERT_EQUAL(a->dflt.i, -1);
    a = fl_ops_attr(fl_ops_find("listen_and_serv"), "optimize_blocks");
    CU_ASSERT_EQUAL(a->type, FL_ATTR_BLOCKS);
    CU_ASSERT_TRUE(a->required);
    a = fl_ops_attr(fl_ops_find("listen_and_serv"), "grad_to_block");
    CU_ASSERT_EQUAL(a->type, FL_ATTR_STRINGS);
    CU_ASSERT_EQUAL(a->dflt.n, 0);
    a = fl_ops_attr(fl_ops_find("while"), "sub_block");
    CU_ASSERT_EQUAL(a->type, FL_ATTR_BLOCK);
    a = fl_ops_attr(fl_ops_find("reduce_sum"), "dim");
    CU_ASSERT_EQUAL(a->dflt.n, 1);
    CU_ASSERT_EQUAL(a->dflt.ints[0], 0);
    CU_ASSERT_PTR_NULL(fl_ops_attr(fl_ops_find("mul"), "axis"));
}

static void check_err(FlOpDesc *op, const char *msg) {
    FlErr e = {{0}};
    CU_ASSERT_EQUAL(fl_ops_check(op, &e), FL_ERROR);
    CHECK_STR(e.msg, msg);
    fl_ir_op_free(op);
}

static FlOpDesc *mul_op(void) {
    FlProgram *p = fl_ir_program_new();
    FlOpDesc *op = fl_ir_op_clone(fl_ir_op_append(fl_ir_block(p, 0), "mul"));
    fl_ir_program_free(p);
    fl_ir_op_add_input(op, "X", "x");
    fl_ir_op_add_input(op, "Y", "w");
    fl_ir_op_add_output(op, "Out", "h");
    return op;
}

static FlOpDesc *new_op(const char *type) {
    FlProgram *p = fl_ir_program_new();
    FlOpDesc *op = fl_ir_op_clone(fl_ir_op_append(fl_ir_block(p, 0), type));
    fl_ir_program_free(p);
    return op;
}

static void test_check(void) {
    FlErr e = {{0}};
    FlOpDesc *op = mul_op();
    CU_ASSERT_EQUAL(fl_ops_check(op, &e), FL_OK);
    fl_ir_op_set_int(op, "x_num_col_dims", 2);
    CU_ASSERT_EQUAL(fl_ops_check(op, &e), FL_OK);
    fl_ir_op_free(op);

    check_err(new_op("mull"), "unknown op 'mull'");
    op = mul_op();
    fl_ir_op_add_input(op, "Z", "z");
    check_err(op, "mul: unknown input slot 'Z'");
    op = mul_op();
    fl_ir_op_add_output(op, "Bias", "z");
    check_err(op, "mul: unknown output slot 'Bias'");
    op = new_op("mul");
    fl_ir_op_add_input(op, "X", "x");
    fl_ir_op_add_output(op, "Out", "h");
    check_err(op, "mul: missing input 'Y'");
    op = new_op("mul");
    fl_ir_op_add_input(op, "X", "x");
    fl_ir_op_add_input_slot(op, "Y");
    fl_ir_op_add_output(op, "Out", "h");
    check_err(op, "mul: missing input 'Y'");
    op = mul_op();
    fl_ir_op_add_input(op, "X", "x2");
    check_err(op, "mul: input 'X' takes one var, found 2");
    op = mul_op();
    fl_ir_op_set_float(op, "x_num_col_dims", 1.0);
    check_err(op, "mul: attribute 'x_num_col_dims' must be int, found float");
    op = mul_op();
    fl_ir_op_set_int(op, "axis", 1);
    check_err(op, "mul: unknown attribute 'axis'");
    op = new_op("fill_constant");
    fl_ir_op_add_output(op, "Out", "c");
    check_err(op, "fill_constant: missing attribute 'shape'");

    /* lists may hold several vars (or none); optional slots may be absent */
    op = new_op("sum");
    fl_ir_op_add_input(op, "X", "a");
    fl_ir_op_add_input(op, "X", "b");
    fl_ir_op_add_output(op, "Out", "s");
    CU_ASSERT_EQUAL(fl_ops_check(op, &e), FL_OK);
    fl_ir_op_free(op);
    op = new_op("channel_recv");
    fl_ir_op_add_input(op, "Channel", "ch");
    fl_ir_op_add_output(op, "Out", "v");
    CU_ASSERT_EQUAL(fl_ops_check(op, &e), FL_OK);
    fl_ir_op_free(op);
    /* gradient ops: outputs optional, forward attrs allowed */
    op = new_op("mul_grad");
    fl_ir_op_add_input(op, "X", "x");
    fl_ir_op_add_input(op, "Y", "w");
    fl_ir_op_add_input(op, "Out@GRAD", "h@GRAD");
    fl_ir_op_add_output(op, "Y@GRAD", "w@GRAD");
    fl_ir_op_set_int(op, "y_num_col_dims", 1);
    CU_ASSERT_EQUAL(fl_ops_check(op, &e), FL_OK);
    fl_ir_op_free(op);
}

static void test_fill_defaults(void) {
    FlOpDesc *op = new_op("conv2d");
    fl_ir_op_set_int(op, "groups", 3);
    fl_ops_fill_defaults(op);
    CU_ASSERT_EQUAL(fl_ir_op_get_int(op, "groups", 0), 3); /* kept */
    FlAttr *a = fl_ir_op_attr(op, "paddings");
    CU_ASSERT_PTR_NOT_NULL_FATAL(a);
    CU_ASSERT_EQUAL(a->type, FL_ATTR_INTS);
    CU_ASSERT_EQUAL(a->n, 2);
    CU_ASSERT_EQUAL(a->ints[0], 0);
    CU_ASSERT_EQUAL(op->attrs.len, 4);
    fl_ir_op_free(op);

    op = new_op("pool2d");
    fl_ops_fill_defaults(op);
    CU_ASSERT_PTR_NULL(fl_ir_op_attr(op, "ksize")); /* required: no default */
    CHECK_STR(fl_ir_op_get_string(op, "pooling_type", "?"), "max");
    CU_ASSERT_TRUE(fl_ir_op_get_bool(op, "exclusive", false));
    fl_ir_op_free(op);

    op = new_op("batch_norm_grad");
    fl_ops_fill_defaults(op);
    CU_ASSERT_DOUBLE_EQUAL(fl_ir_op_get_float(op, "momentum", 0), 0.9, 1e-12);
    fl_ir_op_free(op);

    op = new_op("listen_and_serv");
    fl_ops_fill_defaults(op);
    a = fl_ir_op_attr(op, "grad_to_block");
    CU_ASSERT_PTR_NOT_NULL_FATAL(a);
    CU_ASSERT_EQUAL(a->type, FL_ATTR_STRINGS);
    CU_ASSERT_EQUAL(a->n, 0);
    CU_ASSERT_EQUAL(fl_ir_op_get_int(op, "lr_block", 0), -1);
    fl_ir_op_free(op);

    /* an optional attribute ("int_value:I?") is left out, and it is the twin of value */
    op = new_op("fill_constant");
    fl_ops_fill_defaults(op);
    CU_ASSERT_PTR_NULL(fl_ir_op_attr(op, "int_value"));
    CU_ASSERT_PTR_NOT_NULL(fl_ir_op_attr(op, "value"));
    const FlAttrInfo *twin = fl_ops_int_twin(fl_ops_of(op), "value");
    CU_ASSERT(twin && twin->optional && !twin->required && strcmp(twin->name, "int_value") == 0);
    CU_ASSERT_PTR_NULL(fl_ops_int_twin(fl_ops_of(op), "dtype"));
    CU_ASSERT(!fl_ops_needs_int_twin(1LL << 53) && fl_ops_needs_int_twin((1LL << 53) + 1) &&
              fl_ops_needs_int_twin(INT64_MIN));
    fl_ir_op_free(op);

    op = new_op("nope");
    fl_ops_fill_defaults(op); /* unknown: nothing */
    CU_ASSERT_EQUAL(op->attrs.len, 0);
    fl_ir_op_free(op);
}

static void test_markdown(void) {
    FlBuf md = {0};
    fl_ops_markdown(&md);
    const char *s = fl_buf_str(&md);
    CU_ASSERT_PTR_NOT_NULL(strstr(s, "\n### mul\n"));
    CU_ASSERT_PTR_NOT_NULL(strstr(s, "\n## Linear algebra\n"));
    CU_ASSERT_PTR_NOT_NULL(strstr(s, "  - `x_num_col_dims` (int): default `1`\n"));
    CU_ASSERT_PTR_NOT_NULL(strstr(s, "  - `shape` (ints): required\n"));
    CU_ASSERT_PTR_NOT_NULL(strstr(s, "| mul_grad | `X`, `Y`, `Out`, `Out@GRAD` | `X@GRAD`, `Y@GRAD` |"));
    for (size_t i = 0; i < FL_OPID_COUNT; i++) {
        char h[128];
        snprintf(h, sizeof h, "\n### %s\n", fl_ops_at(i)->name);
        CU_ASSERT_PTR_NOT_NULL(strstr(s, h));
    }

    if (getenv("FL_UPDATE_DOCS")) {
        FlErr e;
        CU_ASSERT_EQUAL(fl_write_file("docs/ops.md", md.data, md.len, &e), FL_OK);
    }
    FlErr e;
    size_t len = 0;
    char *doc = fl_read_file("docs/ops.md", &len, &e);
    if (!doc) fprintf(stderr, "\n%s (run from the repository root)\n", e.msg);
    CU_ASSERT_PTR_NOT_NULL(doc);
    if (doc) {
        bool same = len == md.len && memcmp(doc, md.data, len) == 0;
        if (!same)
            fprintf(stderr, "\ndocs/ops.md is out of date: run FL_UPDATE_DOCS=1 test_ops from the "
                            "repository root\n");
        CU_ASSERT_TRUE(same);
    }
    free(doc);
    fl_buf_free(&md);
}

int main(void) {
    static const FlTestCase cases[] = {
        {"first use from threads", test_first_use_threads},
        {"every ops.def line", test_every_line},
        {"slots and derived gradient ops", test_slots},
        {"ops carry their table entry", test_op_of},
        {"attributes and defaults", test_attrs},
        {"fl_ops_check", test_check},
        {"fl_ops_fill_defaults", test_fill_defaults},
        {"docs/ops.md", test_markdown},
    };
    return fl_test_run("ops", NULL, NULL, cases, sizeof cases / sizeof cases[0]);
}
