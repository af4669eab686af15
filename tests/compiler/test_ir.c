/* test_ir.c: the IR module (compiler/ir): building, cloning, file round trips, defensive
 * decoding with exact error messages, validation, `flc show` text, `flc dot` accepted by the
 * real Graphviz, and linear-time behaviour on a 4,000-layer program.
 *
 * With FL_IR_WRITE_CORPUS=1 in the environment, the test also (re)writes the fuzz seeds in
 * tests/fuzz/corpus/ir/ (run from the repository root, as ctest does).
 */
#include <CUnit/Basic.h>
#include "tests/cunit.h"
#include <CUnit/CUnit.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "compiler/ir/ir.h"
#include "compiler/ir/ir_test.h"

static char tmpdir[256];

static const char *tmp_path(const char *name) {
    static char buf[4][512];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s/%s", tmpdir, name);
    return buf[k];
}


/* ---- a hand-built bundle using every feature ---- */

static FlVarDesc *var(FlBlock *b, const char *name, FlDType dt, int ndim, const int64_t *shape) {
    FlVarDesc *v = fl_ir_var_add(b, name);
    CU_ASSERT_PTR_NOT_NULL_FATAL(v);
    v->dtype = dt;
    fl_ir_var_set_shape(v, ndim, shape);
    return v;
}

static FlLoc loc(int file, int line, int col) {
    return (FlLoc){file, line, col, 3};
}

static FlReaderSpec *make_reader(const char *path, FlReaderPart part) {
    FlReaderSpec *r = calloc(1, sizeof *r);
    r->path = strdup(path);
    r->base_dir = strdup("/nonexistent/project/examples"); /* absolute, as the evaluator makes it */
    r->skip_rows = 1;
    r->sep = ',';
    int64_t xc[] = {0, 1, 2}, yc[] = {13};
    FlFeedCols x = {strdup("x"), FL_DT_FLOAT32, malloc(sizeof xc), 3, 0};
    memcpy(x.cols, xc, sizeof xc);
    FlFeedCols y = {strdup("y"), FL_DT_INT64, malloc(sizeof yc), 1, 0};
    memcpy(y.cols, yc, sizeof yc);
    FlFeedCols w = {strdup("w"), FL_DT_INT64, malloc(sizeof yc), 1, 2};
    w.cols[0] = 3;
    FL_VEC_PUSH(&r->feeds, x);
    FL_VEC_PUSH(&r->feeds, y);
    FL_VEC_PUSH(&r->feeds, w);
    FL_VEC_PUSH(&r->normalize, strdup("x"));
    FL_VEC_PUSH(&r->scale_feeds, strdup("x"));
    FL_VEC_PUSH(&r->scale_factors, 0.25);
    r->has_split = true;
    r->split_fraction = 0.8;
    r->split_seed = 7;
    r->part = part;
    return r;
}

static FlBundle *make_bundle(void) {
    FlBundle *b = fl_ir_bundle_new();
    FL_VEC_PUSH(&b->source_paths, strdup("examples/fit_a_line.fl"));
    FL_VEC_PUSH(&b->source_paths, strdup("stdlib/fluid/layers.fl"));

    /* startup: initialise w */
    FlBlock *s0 = fl_ir_block(b->startup, 0);
    int64_t wshape[] = {13, 1};
    FlVarDesc *sw = var(s0, "fc_0.w_0", FL_DT_FLOAT32, 2, wshape);
    sw->persistable = true;
    FlOpDesc *init = fl_ir_op_append(s0, "uniform_random");
    fl_ir_op_add_output(init, "Out", "fc_0.w_0");
    fl_ir_op_set_ints(init, "shape", wshape, 2);
    fl_ir_op_set_float(init, "min", -0.5);
    fl_ir_op_set_float(init, "max", 0.5);
    fl_ir_op_set_int(init, "seed", 42);

    /* main: block 0 with data, parameter, channel and raw vars */
    FlProgram *m = b->main;
    FlBlock *b0 = fl_ir_block(m, 0);
    int64_t xs[] = {-1, 13}, ys[] = {-1, 1};
    FlVarDesc *x = var(b0, "x", FL_DT_FLOAT32, 2, xs);
    x->stop_gradient = true;
    x->fed = true;
    x->loc = loc(0, 3, 5);
    FlVarDesc *w = var(b0, "fc_0.w_0", FL_DT_FLOAT32, 2, wshape);
    w->persistable = w->trainable = true;
    w->loc = loc(1, 20, 9);
    var(b0, "fc_0.tmp_0", FL_DT_FLOAT32, 2, ys)->loc = loc(1, 21, 5);
    FlVarDesc *ch = var(b0, "ch", FL_DT_FLOAT32, 0, NULL);
    ch->kind = FL_VAR_CHANNEL;
    ch->capacity = 4;
    FlVarDesc *cc = var(b0, "chan_of_chans", FL_DT_INT64, 1, (int64_t[]){1});
    cc->kind = FL_VAR_CHANNEL;
    cc->elem_chans = 2; /* chan chan chan int64 [1] */
    var(b0, "step_scopes", FL_DT_FLOAT32, 0, NULL)->kind = FL_VAR_RAW;
    var(b0, "cond", FL_DT_BOOL, 1, (int64_t[]){1});
    var(b0, "i", FL_DT_INT64, 1, (int64_t[]){1});
    var(b0, "f64", FL_DT_FLOAT64, 1, (int64_t[]){-1});
    var(b0, "i32", FL_DT_INT32, 3, (int64_t[]){2, 3, 4});
    /* a LoD tensor of two levels and its offsets */
    var(b0, "words@LOD0", FL_DT_INT64, 1, (int64_t[]){-1});
    var(b0, "words@LOD1", FL_DT_INT64, 1, (int64_t[]){-1});
    fl_ir_var_set_lod(var(b0, "words", FL_DT_INT64, 2, (int64_t[]){-1, 1}), 2,
                      (const char *const[]){"words@LOD0", "words@LOD1"});

    FlOpDesc *mul = fl_ir_op_append(b0, "mul");
    fl_ir_op_add_input(mul, "X", "x");
    fl_ir_op_add_input(mul, "Y", "fc_0.w_0");
    fl_ir_op_add_output(mul, "Out", "fc_0.tmp_0");
    fl_ir_op_set_int(mul, "y_num_col_dims", 1);
    fl_ir_op_set_int(mul, "x_num_col_dims", 1);
    mul->loc = loc(0, 9, 8);

    FlOpDesc *all = fl_ir_op_append(b0, "every_attr");
    fl_ir_op_add_input_slot(all, "Empty");
    fl_ir_op_add_input(all, "X", "x");
    fl_ir_op_add_input(all, "X", "fc_0.tmp_0");
    fl_ir_op_add_output(all, "Out", "ch");
    fl_ir_op_set_int(all, "an_int", -3);
    fl_ir_op_set_float(all, "a_float", 0.1);
    fl_ir_op_set_string(all, "a_string", "say \"hi\"\\n");
    fl_ir_op_set_bool(all, "a_bool", true);
    fl_ir_op_set_bool(all, "b_bool", false);
    fl_ir_op_set_ints(all, "ints", (int64_t[]){1, -2, 3}, 3);
    fl_ir_op_set_ints(all, "no_ints", NULL, 0);
    fl_ir_op_set_floats(all, "floats", (double[]){0.5, 1e-8, 3}, 3);
    fl_ir_op_set_strings(all, "strings", (const char *const[]){"a", "b.c", ""}, 3);
    all->loc = loc(1, 40, 1);

    /* while (sub-block 1), whose body holds a go (sub-block 2) */
    FlBlock *b1 = fl_ir_block_new(m, 0);
    FlBlock *b2 = fl_ir_block_new(m, 1);
    FlOpDesc *wh = fl_ir_op_append(b0, "while");
    fl_ir_op_add_input(wh, "X", "x");
    fl_ir_op_add_input(wh, "Condition", "cond");
    fl_ir_op_add_output(wh, "Out", "i");
    fl_ir_op_add_output(wh, "StepScopes", "step_scopes");
    fl_ir_op_set_block(wh, "sub_block", 1);
    var(b1, "t", FL_DT_FLOAT32, 2, ys);
    FlOpDesc *go = fl_ir_op_append(b1, "go");
    fl_ir_op_add_input(go, "X", "ch");
    fl_ir_op_set_block(go, "sub_block", 2);
    FlOpDesc *send = fl_ir_op_append(b2, "channel_send");
    fl_ir_op_add_input(send, "Channel", "ch");
    fl_ir_op_add_input(send, "X", "t");
    fl_ir_op_add_output(send, "Status", "undeclared_status");

    /* listen_and_serv with two optimize blocks */
    FlBlock *b3 = fl_ir_block_new(m, 0);
    FlBlock *b4 = fl_ir_block_new(m, 0);
    FlOpDesc *ls = fl_ir_op_append(b0, "listen_and_serv");
    fl_ir_op_add_input(ls, "X", "fc_0.w_0");
    fl_ir_op_set_blocks(ls, "optimize_blocks", (int64_t[]){3, 4}, 2);
    fl_ir_op_set_string(ls, "endpoint", "127.0.0.1:6174");
    FlOpDesc *sgd = fl_ir_op_append(b3, "sgd");
    fl_ir_op_add_input(sgd, "Param", "fc_0.w_0");
    fl_ir_op_add_output(sgd, "ParamOut", "fc_0.w_0");
    fl_ir_op_set_float(sgd, "learning_rate", 0.01);
    (void)b4;

    /* run spec */
    b->run.present = true;
    b->run.reader = make_reader("data/housing.csv", FL_PART_TRAIN);
    b->run.test_reader = make_reader("data/housing.csv", FL_PART_TEST);
    b->run.test_reader->sep = '\t';
    b->run.batch_size = 20;
    b->run.epochs = 5;
    b->run.seed = 3;
    FL_VEC_PUSH(&b->run.fetch_names, strdup("loss"));
    FL_VEC_PUSH(&b->run.fetch_vars, strdup("fc_0.tmp_0"));
    FL_VEC_PUSH(&b->run.fetch_names, strdup("x"));
    FL_VEC_PUSH(&b->run.fetch_vars, strdup("x"));
    b->run.profile = (FlProfileSpec){true, strdup("CPU"), strdup("ave"), strdup("/tmp/profile")};
    return b;
}

/* A small bundle (seed for truncation and corruption tests). */
static FlBundle *make_small(void) {
    FlBundle *b = fl_ir_bundle_new();
    FL_VEC_PUSH(&b->source_paths, strdup("dir/small.fl"));
    FlBlock *b0 = fl_ir_block(b->main, 0);
    int64_t shape[] = {-1, 2};
    FlVarDesc *x = var(b0, "x", FL_DT_FLOAT32, 2, shape);
    x->stop_gradient = true;
    var(b0, "y", FL_DT_FLOAT32, 2, shape);
    FlBlock *b1 = fl_ir_block_new(b->main, 0);
    FlOpDesc *op = fl_ir_op_append(b0, "scale");
    fl_ir_op_add_input(op, "X", "x");
    fl_ir_op_add_output(op, "Out", "y");
    fl_ir_op_set_float(op, "scale", 2.5);
    fl_ir_op_set_bool(op, "bias_after_scale", true);
    op->loc = (FlLoc){0, 4, 7, 5};
    FlOpDesc *c = fl_ir_op_append(b0, "conditional_block");
    fl_ir_op_add_input(c, "Cond", "x");
    fl_ir_op_set_block(c, "sub_block", 1);
    FlOpDesc *p = fl_ir_op_append(b1, "print");
    fl_ir_op_add_input(p, "In", "y");
    fl_ir_op_set_string(p, "message", "y:");
    return b;
}

static FlPlan *make_plan(void) {
    FlPlan *p = fl_ir_plan_new();
    p->pservers = 1;
    p->trainers = 2;
    for (int t = 0; t < 2; t++) {
        FlBundle *b = make_small();
        free(b->role);
        b->role = strdup("trainer");
        b->role_index = t;
        FL_VEC_PUSH(&p->roles, b);
    }
    FlBundle *ps = make_bundle();
    free(ps->role);
    ps->role = strdup("pserver");
    ps->run.present = false;
    ps->run.profile.present = false;
    FL_VEC_PUSH(&p->roles, ps);
    int64_t map[] = {2, 0, 1};
    for (int i = 0; i < 3; i++) FL_VEC_PUSH(&p->rank_role, map[i]);
    return p;
}

/* ---- field-by-field equality ---- */

static bool str_eq(const char *a, const char *b) {
    if (!a || !b) return a == b;
    return strcmp(a, b) == 0;
}

static bool strs_eq(char *const *a, size_t na, char *const *b, size_t nb) {
    if (na != nb) return false;
    for (size_t i = 0; i < na; i++)
        if (!str_eq(a[i], b[i])) return false;
    return true;
}

static bool loc_eq(FlLoc a, FlLoc b) {
    return a.file == b.file && a.line == b.line && a.col == b.col && a.len == b.len;
}

static bool var_eq(const FlVarDesc *a, const FlVarDesc *b) {
    if (!str_eq(a->name, b->name) || a->kind != b->kind || a->dtype != b->dtype ||
        a->ndim != b->ndim || a->persistable != b->persistable || a->trainable != b->trainable ||
        a->stop_gradient != b->stop_gradient || a->fed != b->fed || a->capacity != b->capacity ||
        a->elem_chans != b->elem_chans || a->lod_level != b->lod_level || !loc_eq(a->loc, b->loc))
        return false;
    for (int i = 0; i < a->lod_level; i++)
        if (!str_eq(a->lod[i], b->lod[i])) return false;
    for (int i = 0; i < a->ndim; i++)
        if (a->shape[i] != b->shape[i]) return false;
    return true;
}

static bool slots_eq(const FlSlot *a, size_t na, const FlSlot *b, size_t nb) {
    if (na != nb) return false;
    for (size_t i = 0; i < na; i++)
        if (!str_eq(a[i].name, b[i].name) || !strs_eq(a[i].args, a[i].nargs, b[i].args, b[i].nargs))
            return false;
    return true;
}

static bool attr_eq(const FlAttr *a, const FlAttr *b) {
    if (!str_eq(a->name, b->name) || a->type != b->type) return false;
    switch (a->type) {
    case FL_ATTR_INT:
    case FL_ATTR_BOOL:
    case FL_ATTR_BLOCK: return a->i == b->i;
    case FL_ATTR_FLOAT: return a->f == b->f;
    case FL_ATTR_STRING: return str_eq(a->s, b->s);
    case FL_ATTR_INTS:
    case FL_ATTR_BLOCKS:
        return a->n == b->n && (a->n == 0 || memcmp(a->ints, b->ints, a->n * sizeof(int64_t)) == 0);
    case FL_ATTR_FLOATS:
        return a->n == b->n && (a->n == 0 || memcmp(a->floats, b->floats, a->n * sizeof(double)) == 0);
    case FL_ATTR_STRINGS: return strs_eq(a->strs, a->n, b->strs, b->n);
    case FL_ATTR_TYPE_COUNT: break;
    }
    return false;
}

static bool op_eq(const FlOpDesc *a, const FlOpDesc *b) {
    if (!str_eq(a->type, b->type) || !loc_eq(a->loc, b->loc)) return false;
    if (!slots_eq(a->ins.data, a->ins.len, b->ins.data, b->ins.len)) return false;
    if (!slots_eq(a->outs.data, a->outs.len, b->outs.data, b->outs.len)) return false;
    if (a->attrs.len != b->attrs.len) return false;
    for (size_t i = 0; i < a->attrs.len; i++)
        if (!attr_eq(&a->attrs.data[i], &b->attrs.data[i])) return false;
    return true;
}

static bool program_eq(const FlProgram *a, const FlProgram *b) {
    if (a->blocks.len != b->blocks.len) return false;
    for (size_t i = 0; i < a->blocks.len; i++) {
        const FlBlock *x = a->blocks.data[i], *y = b->blocks.data[i];
        if (x->idx != y->idx || x->parent != y->parent || x->vars.len != y->vars.len ||
            x->ops.len != y->ops.len || x->var_index.len != y->var_index.len)
            return false;
        for (size_t j = 0; j < x->vars.len; j++) {
            if (!var_eq(x->vars.data[j], y->vars.data[j])) return false;
            if (fl_ir_var_find(y, x->vars.data[j]->name) != y->vars.data[j]) return false;
        }
        for (size_t j = 0; j < x->ops.len; j++)
            if (!op_eq(x->ops.data[j], y->ops.data[j])) return false;
    }
    return true;
}

static bool reader_eq(const FlReaderSpec *a, const FlReaderSpec *b) {
    if (!a || !b) return a == b;
    if (!str_eq(a->path, b->path) || !str_eq(a->base_dir, b->base_dir) ||
        a->skip_rows != b->skip_rows || a->sep != b->sep || a->feeds.len != b->feeds.len ||
        a->has_split != b->has_split || a->split_fraction != b->split_fraction ||
        a->split_seed != b->split_seed || a->part != b->part)
        return false;
    for (size_t i = 0; i < a->feeds.len; i++) {
        const FlFeedCols *x = &a->feeds.data[i], *y = &b->feeds.data[i];
        if (!str_eq(x->feed, y->feed) || x->dtype != y->dtype || x->ncols != y->ncols || x->lod_level != y->lod_level ||
            memcmp(x->cols, y->cols, x->ncols * sizeof(int64_t)) != 0)
            return false;
    }
    if (!strs_eq(a->normalize.data, a->normalize.len, b->normalize.data, b->normalize.len))
        return false;
    if (!strs_eq(a->scale_feeds.data, a->scale_feeds.len, b->scale_feeds.data, b->scale_feeds.len))
        return false;
    if (a->scale_factors.len != b->scale_factors.len) return false;
    for (size_t i = 0; i < a->scale_factors.len; i++)
        if (a->scale_factors.data[i] != b->scale_factors.data[i]) return false;
    return true;
}

static bool bundle_eq(const FlBundle *a, const FlBundle *b) {
    const FlRunSpec *x = &a->run, *y = &b->run;
    return program_eq(a->startup, b->startup) && program_eq(a->main, b->main) &&
           x->present == y->present && reader_eq(x->reader, y->reader) &&
           reader_eq(x->test_reader, y->test_reader) && x->batch_size == y->batch_size &&
           x->epochs == y->epochs && x->seed == y->seed &&
           strs_eq(x->fetch_names.data, x->fetch_names.len, y->fetch_names.data,
                   y->fetch_names.len) &&
           strs_eq(x->fetch_vars.data, x->fetch_vars.len, y->fetch_vars.data, y->fetch_vars.len) &&
           x->profile.present == y->profile.present &&
           (!x->profile.present || (str_eq(x->profile.state, y->profile.state) &&
                                    str_eq(x->profile.sorted_key, y->profile.sorted_key) &&
                                    str_eq(x->profile.path, y->profile.path))) &&
           strs_eq(a->source_paths.data, a->source_paths.len, b->source_paths.data,
                   b->source_paths.len) &&
           str_eq(a->role, b->role) && a->role_index == b->role_index;
}

static bool plan_eq(const FlPlan *a, const FlPlan *b) {
    if (!str_eq(a->mode, b->mode) || a->pservers != b->pservers || a->trainers != b->trainers ||
        a->roles.len != b->roles.len || a->rank_role.len != b->rank_role.len)
        return false;
    for (size_t i = 0; i < a->roles.len; i++)
        if (!bundle_eq(a->roles.data[i], b->roles.data[i])) return false;
    for (size_t i = 0; i < a->rank_role.len; i++)
        if (a->rank_role.data[i] != b->rank_role.data[i]) return false;
    return true;
}

static char *show_bundle(const FlBundle *b) {
    FlBuf out = {0};
    fl_ir_show_bundle(b, &out);
    return out.data;
}

static char *show_plan(const FlPlan *p) {
    FlBuf out = {0};
    fl_ir_show_plan(p, &out);
    return out.data;
}

/* ---- tests: building ---- */

static void test_build_api(void) {
    FlProgram *p = fl_ir_program_new();
    CU_ASSERT_EQUAL(p->blocks.len, 1);
    FlBlock *b0 = fl_ir_block(p, 0);
    CU_ASSERT_EQUAL(b0->parent, -1);
    FlVarDesc *v = fl_ir_var_add(b0, "a");
    CU_ASSERT_PTR_NOT_NULL(v);
    CU_ASSERT_EQUAL(v->kind, FL_VAR_DENSE);
    CU_ASSERT_EQUAL(v->dtype, FL_DT_FLOAT32);
    CU_ASSERT_EQUAL(v->ndim, 0);
    CU_ASSERT_EQUAL(v->loc.file, -1);
    CU_ASSERT_PTR_NULL(fl_ir_var_add(b0, "a"));
    CU_ASSERT_PTR_EQUAL(fl_ir_var_find(b0, "a"), v);
    FlBlock *b1 = fl_ir_block_new(p, 0);
    FlBlock *b2 = fl_ir_block_new(p, 1);
    CU_ASSERT_EQUAL(b2->idx, 2);
    CU_ASSERT_EQUAL(b2->parent, 1);
    FlVarDesc *shadow = fl_ir_var_add(b1, "s");
    CU_ASSERT_PTR_EQUAL(fl_ir_var_lookup(p, b2, "a"), v);
    CU_ASSERT_PTR_EQUAL(fl_ir_var_lookup(p, b2, "s"), shadow);
    CU_ASSERT_PTR_NULL(fl_ir_var_lookup(p, b0, "s"));
    CU_ASSERT_PTR_NULL(fl_ir_var_find(b2, "a"));

    /* many vars: pointers stay valid, removal keeps the index in step */
    char name[32];
    for (int i = 0; i < 1000; i++) {
        snprintf(name, sizeof name, "v%d", i);
        fl_ir_var_add(b0, name)->capacity = i;
    }
    CU_ASSERT_PTR_EQUAL(fl_ir_var_find(b0, "a"), v);
    CU_ASSERT_TRUE(fl_ir_var_remove(b0, "v500"));
    CU_ASSERT_FALSE(fl_ir_var_remove(b0, "v500"));
    CU_ASSERT_PTR_NULL(fl_ir_var_find(b0, "v500"));
    CU_ASSERT_EQUAL(fl_ir_var_find(b0, "v501")->capacity, 501);
    CU_ASSERT_EQUAL(b0->vars.len, 1000);
    CU_ASSERT_EQUAL(b0->var_index.len, 1000);
    CU_ASSERT_PTR_NOT_NULL(fl_ir_var_add(b0, "v500"));

    FlVarDesc *c = fl_ir_var_add(b0, "copy");
    v->persistable = true;
    fl_ir_var_set_shape(v, 2, (int64_t[]){-1, 4});
    fl_ir_var_copy(c, v);
    CU_ASSERT_STRING_EQUAL(c->name, "copy");
    CU_ASSERT_TRUE(c->persistable);
    CU_ASSERT_EQUAL(c->shape[1], 4);

    /* ops: append, insert, remove; slots; attributes */
    FlOpDesc *o1 = fl_ir_op_append(b0, "one");
    fl_ir_op_append(b0, "three");
    FlOpDesc *o2 = fl_ir_op_insert(b0, 1, "two");
    fl_ir_op_insert(b0, 0, "zero");
    CU_ASSERT_EQUAL(b0->ops.len, 4);
    CU_ASSERT_STRING_EQUAL(b0->ops.data[0]->type, "zero");
    CU_ASSERT_PTR_EQUAL(b0->ops.data[1], o1);
    CU_ASSERT_PTR_EQUAL(b0->ops.data[2], o2);
    fl_ir_op_remove(b0, 0);
    CU_ASSERT_PTR_EQUAL(b0->ops.data[0], o1);
    CU_ASSERT_STRING_EQUAL(b0->ops.data[2]->type, "three");

    for (int i = 0; i < 3000; i++) {
        snprintf(name, sizeof name, "x%d", i);
        fl_ir_op_add_input(o1, "X", name);
    }
    fl_ir_op_add_output(o1, "Out", "y");
    fl_ir_op_add_input(o1, "Y", "b");
    fl_ir_op_add_output_slot(o1, "Empty");
    CU_ASSERT_EQUAL(o1->ins.len, 2);
    CU_ASSERT_EQUAL(fl_ir_op_input(o1, "X")->nargs, 3000);
    CU_ASSERT_STRING_EQUAL(fl_ir_op_input(o1, "X")->args[2999], "x2999");
    CU_ASSERT_STRING_EQUAL(fl_ir_op_input1(o1, "Y"), "b");
    CU_ASSERT_STRING_EQUAL(fl_ir_op_output1(o1, "Out"), "y");
    CU_ASSERT_PTR_NULL(fl_ir_op_output1(o1, "Empty"));
    CU_ASSERT_PTR_NULL(fl_ir_op_output(o1, "Nope"));
    CU_ASSERT_PTR_NULL(fl_ir_op_input1(o1, "Nope"));
    FlSlot *xs = fl_ir_op_input(o1, "X");
    fl_ir_slot_set_arg(xs, 1, xs->args[1]); /* its own value */
    fl_ir_slot_set_arg(xs, 0, "first");
    CU_ASSERT_STRING_EQUAL(xs->args[0], "first");
    CU_ASSERT_STRING_EQUAL(xs->args[1], "x1");
    fl_ir_slot_clear(xs);
    CU_ASSERT_EQUAL(xs->nargs, 0);
    fl_ir_op_add_input(o1, "X", "again");
    CU_ASSERT_STRING_EQUAL(fl_ir_op_input1(o1, "X"), "again");

    fl_ir_op_set_int(o1, "k", 3);
    fl_ir_op_set_string(o1, "s", "v");
    fl_ir_op_set_string(o1, "s", fl_ir_op_get_string(o1, "s", NULL)); /* its own value */
    fl_ir_op_set_float(o1, "k", 1.5); /* replaces, in place */
    CU_ASSERT_EQUAL(o1->attrs.len, 2);
    CU_ASSERT_STRING_EQUAL(o1->attrs.data[0].name, "k");
    CU_ASSERT_DOUBLE_EQUAL(fl_ir_op_get_float(o1, "k", 0), 1.5, 0);
    CU_ASSERT_STRING_EQUAL(fl_ir_op_get_string(o1, "s", NULL), "v");
    CU_ASSERT_EQUAL(fl_ir_op_get_int(o1, "absent", 9), 9);
    CU_ASSERT_TRUE(fl_ir_op_get_bool(o1, "absent", true));
    fl_ir_op_set_bool(o1, "flag", false);
    CU_ASSERT_FALSE(fl_ir_op_get_bool(o1, "flag", true));
    fl_ir_op_set_block(o1, "sub_block", 2);
    CU_ASSERT_EQUAL(fl_ir_op_get_int(o1, "sub_block", -1), 2);
    CU_ASSERT_EQUAL(fl_ir_op_attr(o1, "sub_block")->type, FL_ATTR_BLOCK);
    fl_ir_op_set_ints(o1, "k", (int64_t[]){4, 5}, 2);
    CU_ASSERT_EQUAL(fl_ir_op_attr(o1, "k")->n, 2);
    CU_ASSERT_EQUAL(fl_ir_op_attr(o1, "k")->ints[1], 5);

    FlOpDesc *cl = fl_ir_op_clone(o1);
    CU_ASSERT_TRUE(op_eq(cl, o1));
    fl_ir_op_add_input(cl, "X", "more"); /* the clone's args array is growable */
    CU_ASSERT_EQUAL(fl_ir_op_input(cl, "X")->nargs, 2);
    fl_ir_op_free(cl);
    fl_ir_op_free(NULL);
    fl_ir_program_free(p);
    fl_ir_program_free(NULL);
    fl_ir_bundle_free(NULL);
    fl_ir_plan_free(NULL);
    fl_ir_reader_free(NULL);
}

static void test_shape_str(void) {
    FlBuf b = {0};
    fl_ir_shape_str(2, (int64_t[]){-1, 13}, &b);
    CHECK_STR(fl_buf_str(&b), "[-1, 13]");
    b.len = 0;
    fl_ir_shape_str(0, NULL, &b);
    CHECK_STR(fl_buf_str(&b), "[]");
    fl_buf_free(&b);
}

static void test_clone(void) {
    FlBundle *b = make_bundle();
    CU_ASSERT_EQUAL(fl_ir_validate_bundle(b, NULL), FL_OK);
    FlBundle *c = fl_ir_bundle_clone(b);
    CU_ASSERT_TRUE(bundle_eq(b, c));
    char *s1 = show_bundle(b), *s2 = show_bundle(c);
    CHECK_STR(s2, s1);
    /* deep: changing the clone leaves the original alone */
    fl_ir_var_find(fl_ir_block(c->main, 0), "x")->ndim = 1;
    fl_ir_op_set_int(fl_ir_block(c->main, 0)->ops.data[0], "x_num_col_dims", 2);
    c->run.reader->path[0] = 'D';
    CU_ASSERT_FALSE(bundle_eq(b, c));
    CU_ASSERT_EQUAL(fl_ir_var_find(fl_ir_block(b->main, 0), "x")->ndim, 2);
    CU_ASSERT_STRING_EQUAL(b->run.reader->path, "data/housing.csv");
    FlProgram *pc = fl_ir_program_clone(b->main);
    CU_ASSERT_TRUE(program_eq(pc, b->main));
    fl_ir_program_free(pc);
    free(s1);
    free(s2);
    fl_ir_bundle_free(c);
    fl_ir_bundle_free(b);
}

/* fl_ir_block_io: what a control op's sub-block tree reads and writes from outside it. Block 1
 * (the sub-block) declares t and l; its block 2 (nested through a BLOCK attr) declares u. */
static void test_block_io(void) {
    FlProgram *p = fl_ir_program_new();
    FlBlock *b0 = fl_ir_block(p, 0);
    FlBlock *b1 = fl_ir_block_new(p, 0), *b2 = fl_ir_block_new(p, 1);
    const char *outer_vars[] = {"x", "y", "w0", "w1", "i"};
    for (size_t k = 0; k < FL_ARRAY_LEN(outer_vars); k++) fl_ir_var_add(b0, outer_vars[k]);
    fl_ir_var_add(b1, "t");
    fl_ir_var_add(b1, "l");
    fl_ir_var_add(b2, "u");
    FlOpDesc *op = fl_ir_op_append(b1, "scale"); /* t = x */
    fl_ir_op_add_input(op, "X", "x");
    fl_ir_op_add_output(op, "Out", "t");
    op = fl_ir_op_append(b1, "list_index"); /* l = [w0, w1][i] */
    fl_ir_op_add_input(op, "X", "w0");
    fl_ir_op_add_input(op, "X", "w1");
    fl_ir_op_add_input(op, "Index", "i");
    fl_ir_op_add_output(op, "Out", "l");
    op = fl_ir_op_append(b1, "assign"); /* writing l writes w0 and w1 */
    fl_ir_op_add_input(op, "X", "t");
    fl_ir_op_add_output(op, "Out", "l");
    op = fl_ir_op_append(b1, "conditional_block");
    fl_ir_op_set_block(op, "sub_block", b2->idx);
    op = fl_ir_op_append(b2, "elementwise_add"); /* u = x + t; y = u */
    fl_ir_op_add_input(op, "X", "x");
    fl_ir_op_add_input(op, "Y", "t");
    fl_ir_op_add_output(op, "Out", "u");
    op = fl_ir_op_append(b2, "assign");
    fl_ir_op_add_input(op, "X", "u");
    fl_ir_op_add_output(op, "Out", "y");
    FlBlockIo io;
    fl_ir_block_io_init(&io);
    fl_ir_block_io_add(&io, false, "i"); /* seeded: listed first, once */
    fl_ir_block_io(p, b0, b1, &io);
    const char *ins[] = {"i", "x", "w0", "w1"}, *outs[] = {"w0", "w1", "y"};
    CU_ASSERT_EQUAL_FATAL(io.ins.len, FL_ARRAY_LEN(ins));
    for (size_t k = 0; k < FL_ARRAY_LEN(ins); k++) CU_ASSERT_STRING_EQUAL(io.ins.data[k], ins[k]);
    CU_ASSERT_EQUAL_FATAL(io.outs.len, FL_ARRAY_LEN(outs));
    for (size_t k = 0; k < FL_ARRAY_LEN(outs); k++) CU_ASSERT_STRING_EQUAL(io.outs.data[k], outs[k]);
    fl_ir_block_io_fini(&io);
    fl_ir_program_free(p);
}

/* ---- tests: files ---- */

static void test_bundle_round_trip(void) {
    FlBundle *b = make_bundle();
    FlErr e = {{0}};
    const char *path = tmp_path("rt.flp");
    CU_ASSERT_EQUAL_FATAL(fl_ir_bundle_write(b, path, &e), FL_OK);
    FlBundle *r = NULL;
    FlPlan *p = NULL;
    if (fl_ir_read(path, &r, &p, &e) != FL_OK) fprintf(stderr, "%s\n", e.msg);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r);
    CU_ASSERT_PTR_NULL(p);
    CU_ASSERT_TRUE(bundle_eq(b, r));
    char *s1 = show_bundle(b), *s2 = show_bundle(r);
    CHECK_STR(s2, s1);
    /* encoding is deterministic: re-encoding what was read gives the same bytes */
    size_t n1, n2;
    uint8_t *d1 = fl_ir_encode_bundle(b, &n1), *d2 = fl_ir_encode_bundle(r, &n2);
    CU_ASSERT_TRUE(n1 == n2 && memcmp(d1, d2, n1) == 0);
    free(d1);
    free(d2);
    free(s1);
    free(s2);
    fl_ir_bundle_free(r);

    /* a bundle without run spec and with no sources */
    FlBundle *empty = fl_ir_bundle_new();
    CU_ASSERT_EQUAL(fl_ir_bundle_write(empty, path, &e), FL_OK);
    CU_ASSERT_EQUAL(fl_ir_read(path, &r, &p, &e), FL_OK);
    CU_ASSERT_TRUE(r && bundle_eq(empty, r));
    fl_ir_bundle_free(r);
    fl_ir_bundle_free(empty);
    fl_ir_bundle_free(b);
}

/* Bundle.readers (docs/driver.md, "Data"): a bundle with readers is written as format 3, read
 * back, shown, cloned; a node of an unknown kind, with an input that is not an earlier node or a
 * batch of size 0 is refused, naming the reader. */
static FlReaderDesc *reader_desc(const char *kind, int32_t input, int64_t n) {
    FlReaderDesc *r = fl_xcalloc(1, sizeof *r);
    r->kind = fl_xstrdup(kind);
    if (input >= 0) FL_VEC_PUSH(&r->inputs, input);
    r->n = n;
    return r;
}

static void test_readers_round_trip(void) {
    FlBundle *b = make_bundle();
    FlErr e = {{0}};
    FlReaderDesc *src = reader_desc("dataset", -1, 0);
    src->dataset = fl_xstrdup("uci_housing");
    src->part = fl_xstrdup("train");
    FL_VEC_PUSH(&b->readers, src);
    FL_VEC_PUSH(&b->readers, reader_desc("shuffle", 0, 500));
    FlReaderDesc *bt = reader_desc("batch", 1, 20);
    bt->drop_last = true;
    FL_VEC_PUSH(&b->readers, bt);
    CU_ASSERT_EQUAL(fl_ir_format_version(b, NULL), 3);
    const char *path = tmp_path("readers.flp");
    CU_ASSERT_EQUAL_FATAL(fl_ir_bundle_write(b, path, &e), FL_OK);
    FlBundle *r = NULL;
    FlPlan *p = NULL;
    CU_ASSERT_EQUAL_FATAL(fl_ir_read(path, &r, &p, &e), FL_OK);
    CU_ASSERT_EQUAL_FATAL(r->readers.len, 3);
    CU_ASSERT_STRING_EQUAL(r->readers.data[0]->dataset, "uci_housing");
    CU_ASSERT_EQUAL(r->readers.data[2]->inputs.data[0], 1);
    CU_ASSERT_TRUE(r->readers.data[2]->drop_last);
    char *s1 = show_bundle(b), *s2 = show_bundle(r);
    CHECK_STR(s2, s1);
    CU_ASSERT_PTR_NOT_NULL(strstr(s1, "== readers ==\nreader 0: dataset() uci_housing.train\n"
                                      "reader 1: shuffle(0) 500\nreader 2: batch(1) 20 drop_last\n"));
    free(s1);
    free(s2);
    FlBundle *cl = fl_ir_bundle_clone(r);
    CU_ASSERT_EQUAL(cl->readers.len, 3);
    CU_ASSERT_NOT_EQUAL(cl->readers.data[0], r->readers.data[0]);
    CU_ASSERT_STRING_EQUAL(cl->readers.data[0]->part, "train");
    fl_ir_bundle_free(cl);
    fl_ir_bundle_free(r);
    b->readers.data[2]->inputs.data[0] = 2; /* itself: not an earlier reader */
    CU_ASSERT_EQUAL(fl_ir_bundle_write(b, path, &e), FL_ERROR);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "reader 2 (batch): input 2 is not an earlier reader"));
    b->readers.data[2]->inputs.data[0] = 1;
    b->readers.data[2]->n = 0;
    CU_ASSERT_EQUAL(fl_ir_bundle_write(b, path, &e), FL_ERROR);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "reader 2 (batch): size 0 below 1"));
    b->readers.data[2]->n = 20;
    free(b->readers.data[1]->kind);
    b->readers.data[1]->kind = fl_xstrdup("map");
    CU_ASSERT_EQUAL(fl_ir_bundle_write(b, path, &e), FL_ERROR);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "reader 1: unknown kind 'map'"));
    fl_ir_bundle_free(b);
}

/* b written to path and read back (a bundle: no plan). */
static FlBundle *written_and_read(const FlBundle *b, const char *path) {
    FlErr e = {{0}};
    FlBundle *r = NULL;
    FlPlan *p = NULL;
    CU_ASSERT_EQUAL_FATAL(fl_ir_bundle_write(b, path, &e), FL_OK);
    CU_ASSERT_EQUAL_FATAL(fl_ir_read(path, &r, &p, &e), FL_OK);
    return r;
}

/* A dataset reader's word dict (imikolov.train(word_idx, n)) is written, read back, shown and
 * cloned; words without as many ids, or a dict on a decorator, are refused. */
static void test_reader_word_dict(void) {
    FlBundle *b = make_bundle();
    FlErr e = {{0}};
    FlReaderDesc *src = reader_desc("dataset", -1, 5);
    src->dataset = fl_xstrdup("imikolov");
    src->part = fl_xstrdup("train");
    FL_VEC_PUSH(&src->words, fl_xstrdup("the"));
    FL_VEC_PUSH(&src->word_ids, 4);
    FL_VEC_PUSH(&src->words, fl_xstrdup("<unk>"));
    FL_VEC_PUSH(&src->word_ids, 0);
    src->data_type = 2;
    FL_VEC_PUSH(&b->readers, src);
    FL_VEC_PUSH(&b->readers, reader_desc("batch", 0, 32));
    const char *path = tmp_path("words.flp");
    FlBundle *r = written_and_read(b, path);
    const FlReaderDesc *d = r->readers.data[0];
    CU_ASSERT_EQUAL_FATAL(d->words.len, 2);
    CU_ASSERT_EQUAL_FATAL(d->word_ids.len, 2);
    CU_ASSERT_STRING_EQUAL(d->words.data[1], "<unk>");
    CU_ASSERT_EQUAL(d->word_ids.data[0], 4);
    CU_ASSERT_EQUAL(d->n, 5);
    CU_ASSERT_EQUAL(d->data_type, 2);
    char *s1 = show_bundle(b), *s2 = show_bundle(r);
    CHECK_STR(s2, s1);
    CU_ASSERT_PTR_NOT_NULL(strstr(s1, "reader 0: dataset() imikolov.train 5 word_idx of 2 words data_type 2\n"));
    free(s1);
    free(s2);
    FlBundle *cl = fl_ir_bundle_clone(r);
    CU_ASSERT_NOT_EQUAL(cl->readers.data[0]->words.data[0], d->words.data[0]);
    CU_ASSERT_STRING_EQUAL(cl->readers.data[0]->words.data[0], "the");
    CU_ASSERT_EQUAL(cl->readers.data[0]->word_ids.data[1], 0);
    CU_ASSERT_EQUAL(cl->readers.data[0]->data_type, 2);
    fl_ir_bundle_free(cl);
    fl_ir_bundle_free(r);
    src->word_ids.len = 1;
    CU_ASSERT_EQUAL(fl_ir_bundle_write(b, path, &e), FL_ERROR);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "reader 0 (dataset): 2 words but 1 word ids"));
    src->word_ids.len = 2;
    FL_VEC_PUSH(&b->readers.data[1]->words, fl_xstrdup("a"));
    FL_VEC_PUSH(&b->readers.data[1]->word_ids, 1);
    CU_ASSERT_EQUAL(fl_ir_bundle_write(b, path, &e), FL_ERROR);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "reader 1 (batch): a word dict on a decorator"));
    fl_ir_bundle_free(b);
}

/* wmt16's arguments (train(src_dict_size, trg_dict_size, src_lang)) are written, read back, shown
 * and cloned; on a decorator they are refused. */
static void test_reader_wmt16_args(void) {
    FlBundle *b = make_bundle();
    FlErr e = {{0}};
    FlReaderDesc *src = reader_desc("dataset", -1, 100);
    src->dataset = fl_xstrdup("wmt16");
    src->part = fl_xstrdup("validation");
    src->n2 = 120;
    src->lang = fl_xstrdup("de");
    FL_VEC_PUSH(&b->readers, src);
    FL_VEC_PUSH(&b->readers, reader_desc("batch", 0, 4));
    const char *path = tmp_path("wmt16.flp");
    FlBundle *r = written_and_read(b, path);
    const FlReaderDesc *d = r->readers.data[0];
    CU_ASSERT_EQUAL(d->n, 100);
    CU_ASSERT_EQUAL(d->n2, 120);
    CU_ASSERT_STRING_EQUAL(d->lang, "de");
    char *s1 = show_bundle(r);
    CU_ASSERT_PTR_NOT_NULL(strstr(s1, "reader 0: dataset() wmt16.validation 100 120 de\n"));
    free(s1);
    FlBundle *cl = fl_ir_bundle_clone(r);
    CU_ASSERT_NOT_EQUAL(cl->readers.data[0]->lang, d->lang);
    CU_ASSERT_STRING_EQUAL(cl->readers.data[0]->lang, "de");
    CU_ASSERT_EQUAL(cl->readers.data[0]->n2, 120);
    fl_ir_bundle_free(cl);
    fl_ir_bundle_free(r);
    b->readers.data[1]->lang = fl_xstrdup("en");
    CU_ASSERT_EQUAL(fl_ir_bundle_write(b, path, &e), FL_ERROR);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "reader 1 (batch): a dataset's arguments on a decorator"));
    fl_ir_bundle_free(b);
}

/* a and b show the same, and the text holds want. */
static void shown_same(const FlBundle *a, const FlBundle *b, const char *want) {
    char *s1 = show_bundle(a), *s2 = show_bundle(b);
    CHECK_STR(s2, s1);
    CU_ASSERT_PTR_NOT_NULL(strstr(s1, want));
    free(s1);
    free(s2);
}

/* A MultiSlot dataset's files and slots (Fluid's Dataset API) are written, read back, shown and
 * cloned; slots without a type each, a type but "uint64" and "float", or slots on a decorator are
 * refused. */
static void test_reader_multislot(void) {
    FlBundle *b = make_bundle();
    FlErr e = {{0}};
    FlReaderDesc *src = reader_desc("multislot", -1, 0);
    FL_VEC_PUSH(&src->files, fl_xstrdup("a.txt"));
    FL_VEC_PUSH(&src->files, fl_xstrdup("b.txt"));
    const char *names[3] = {"words", "dense", "click"}, *types[3] = {"uint64", "float", "uint64"};
    int64_t widths[3] = {0, 13, 1};
    for (int i = 0; i < 3; i++) {
        FL_VEC_PUSH(&src->slot_names, fl_xstrdup(names[i]));
        FL_VEC_PUSH(&src->slot_types, fl_xstrdup(types[i]));
        FL_VEC_PUSH(&src->slot_widths, widths[i]);
    }
    FL_VEC_PUSH(&b->readers, src);
    FL_VEC_PUSH(&b->readers, reader_desc("batch", 0, 32));
    const char *path = tmp_path("multislot.flp");
    FlBundle *r = written_and_read(b, path);
    const FlReaderDesc *d = r->readers.data[0];
    CU_ASSERT_EQUAL_FATAL(d->files.len, 2);
    CU_ASSERT_EQUAL_FATAL(d->slot_widths.len, 3);
    CU_ASSERT_STRING_EQUAL(d->files.data[1], "b.txt");
    CU_ASSERT_STRING_EQUAL(d->slot_types.data[1], "float");
    CU_ASSERT_EQUAL(d->slot_widths.data[1], 13);
    shown_same(b, r, "reader 0: multislot() slots words:uint64:0 dense:float:13 click:uint64:1 files a.txt b.txt\n");
    FlBundle *cl = fl_ir_bundle_clone(r);
    CU_ASSERT_NOT_EQUAL(cl->readers.data[0]->slot_names.data[2], d->slot_names.data[2]);
    CU_ASSERT_STRING_EQUAL(cl->readers.data[0]->slot_names.data[2], "click");
    CU_ASSERT_EQUAL(cl->readers.data[0]->slot_widths.data[0], 0);
    fl_ir_bundle_free(cl);
    fl_ir_bundle_free(r);
    src->slot_types.len = 2;
    CU_ASSERT_EQUAL(fl_ir_bundle_write(b, path, &e), FL_ERROR);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "reader 0 (multislot): 3 slot names, 2 types, 3 widths"));
    src->slot_types.len = 3;
    free(src->slot_types.data[1]);
    src->slot_types.data[1] = fl_xstrdup("double");
    CU_ASSERT_EQUAL(fl_ir_bundle_write(b, path, &e), FL_ERROR);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "reader 0 (multislot): slot 'dense' of type 'double' and width 13"));
    free(src->slot_types.data[1]);
    src->slot_types.data[1] = fl_xstrdup("float");
    FL_VEC_PUSH(&b->readers.data[1]->files, fl_xstrdup("c.txt"));
    CU_ASSERT_EQUAL(fl_ir_bundle_write(b, path, &e), FL_ERROR);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "reader 1 (batch): MultiSlot files or slots on another kind of reader"));
    fl_ir_bundle_free(b);
}

/* A ctr_reader's files, slots, keys, line format and file type (fluid.contrib.ctr_reader) are
 * written, read back, shown and cloned; a format but "svm" and "csv", keys not one per slot, no
 * read thread, or a line format on another kind of reader are refused. */
static void test_reader_ctr(void) {
    FlBundle *b = make_bundle();
    FlErr e = {{0}};
    FlReaderDesc *src = reader_desc("ctr", -1, 2);
    FL_VEC_PUSH(&src->files, fl_xstrdup("a.csv.gz"));
    const char *names[3] = {"label", "dense", "ids"}, *types[3] = {"uint64", "float", "uint64"};
    int64_t widths[3] = {1, 3, 0}, keys[3] = {0, 1, 2};
    for (int i = 0; i < 3; i++) {
        FL_VEC_PUSH(&src->slot_names, fl_xstrdup(names[i]));
        FL_VEC_PUSH(&src->slot_types, fl_xstrdup(types[i]));
        FL_VEC_PUSH(&src->slot_widths, widths[i]);
        FL_VEC_PUSH(&src->slot_keys, keys[i]);
    }
    src->line_format = fl_xstrdup("csv");
    src->gzip = true;
    FL_VEC_PUSH(&b->readers, src);
    const char *path = tmp_path("ctr.flp");
    FlBundle *r = written_and_read(b, path);
    const FlReaderDesc *d = r->readers.data[0];
    CU_ASSERT_EQUAL_FATAL(d->slot_keys.len, 3);
    CU_ASSERT_EQUAL(d->slot_keys.data[2], 2);
    CU_ASSERT_STRING_EQUAL(d->line_format, "csv");
    CU_ASSERT_TRUE(d->gzip);
    CU_ASSERT_EQUAL(d->n, 2);
    shown_same(b, r, "reader 0: ctr() 2 slots label:uint64:1 dense:float:3 ids:uint64:0 keys 0 1 2 csv gzip files "
                     "a.csv.gz\n");
    FlBundle *cl = fl_ir_bundle_clone(r);
    CU_ASSERT_NOT_EQUAL(cl->readers.data[0]->line_format, d->line_format);
    CU_ASSERT_STRING_EQUAL(cl->readers.data[0]->line_format, "csv");
    CU_ASSERT_EQUAL(cl->readers.data[0]->slot_keys.data[1], 1);
    fl_ir_bundle_free(cl);
    fl_ir_bundle_free(r);
    free(src->line_format);
    src->line_format = fl_xstrdup("pw");
    CU_ASSERT_EQUAL(fl_ir_bundle_write(b, path, &e), FL_ERROR);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "reader 0 (ctr): line format 'pw'"));
    free(src->line_format);
    src->line_format = fl_xstrdup("svm");
    src->slot_keys.len = 2;
    CU_ASSERT_EQUAL(fl_ir_bundle_write(b, path, &e), FL_ERROR);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "reader 0 (ctr): 3 slot names, 3 types, 3 widths, 2 keys"));
    src->slot_keys.len = 3;
    src->n = 0;
    CU_ASSERT_EQUAL(fl_ir_bundle_write(b, path, &e), FL_ERROR);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "reader 0 (ctr): size 0 below 1"));
    src->n = 1;
    FL_VEC_PUSH(&b->readers, reader_desc("batch", 0, 32));
    b->readers.data[1]->line_format = fl_xstrdup("csv");
    CU_ASSERT_EQUAL(fl_ir_bundle_write(b, path, &e), FL_ERROR);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "reader 1 (batch): ctr_reader's slot keys or line format on another kind"));
    fl_ir_bundle_free(b);
}

/* A pserver's checkpoint to load after its startup program (load_persistables_for_increment) is
 * written (as format 3), read back, shown and cloned; on another role it is refused. */
static void test_bundle_load(void) {
    FlBundle *b = make_bundle();
    FlErr e = {{0}};
    free(b->role);
    b->role = fl_xstrdup("pserver");
    b->load = fl_xstrdup("ck");
    CU_ASSERT_EQUAL(fl_ir_format_version(b, NULL), 3);
    const char *path = tmp_path("load.flp");
    FlBundle *r = written_and_read(b, path);
    CU_ASSERT_STRING_EQUAL(r->load, "ck");
    FlBuf out = {0};
    fl_ir_show_bundle(r, &out);
    CU_ASSERT_PTR_NOT_NULL(strstr(fl_buf_str(&out), "load: ck (after the startup program)\n"));
    fl_buf_free(&out);
    FlBundle *cl = fl_ir_bundle_clone(r);
    CU_ASSERT_STRING_EQUAL(cl->load, "ck");
    fl_ir_bundle_free(cl);
    fl_ir_bundle_free(r);
    free(b->role);
    b->role = fl_xstrdup("trainer");
    CU_ASSERT_EQUAL(fl_ir_bundle_write(b, path, &e), FL_ERROR);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "a bundle loads checkpoint 'ck' after its startup program, but only a pserver"));
    fl_ir_bundle_free(b);
}

/* A driver program (docs/driver.md) is kept, shown and checked; a bundle with one is written as
 * format 3, a bundle without one as format 2, byte for byte as before the field existed. */
static void test_driver_round_trip(void) {
    FlBundle *b = make_bundle();
    FlErr e = {{0}};
    CU_ASSERT_EQUAL(fl_ir_format_version(b, NULL), 2);
    size_t n0, n2;
    uint8_t *d0 = fl_ir_encode_bundle(b, &n0), *d2 = fl_ir_encode_bundle_version(b, 2, &n2);
    CU_ASSERT_TRUE(n0 == n2 && memcmp(d0, d2, n0) == 0);
    free(d2);
    b->driver = fl_ir_program_new();
    FlBlock *d = fl_ir_block(b->driver, 0);
    int64_t one = 1;
    var(d, "fetch_0.tmp_0", FL_DT_FLOAT32, 1, &one);
    FlOpDesc *op = fl_ir_op_append(d, "run_program");
    fl_ir_op_set_string(op, "program", "main");
    fl_ir_op_add_output(op, "Fetch", "fetch_0.tmp_0");
    fl_ir_op_set_strings(op, "fetch_names", (const char *const[]){"y"}, 1);
    CU_ASSERT_EQUAL(fl_ir_format_version(b, NULL), FL_IR_FORMAT_VERSION);
    CU_ASSERT_EQUAL(FL_IR_FORMAT_VERSION, 3);
    size_t n1;
    uint8_t *d1 = fl_ir_encode_bundle(b, &n1);
    CU_ASSERT_TRUE(n1 > n0); /* the driver is in the file */
    free(d1);
    free(d0);
    const char *path = tmp_path("driver.flp");
    CU_ASSERT_EQUAL_FATAL(fl_ir_bundle_write(b, path, &e), FL_OK);
    FlBundle *r = NULL;
    FlPlan *p = NULL;
    CU_ASSERT_EQUAL_FATAL(fl_ir_read(path, &r, &p, &e), FL_OK);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r->driver);
    /* beside make_bundle's run spec, a driver is shown as fluid.train's loop */
    shown_same(b, r, "== driver program (fluid.train's loop) ==\nblock 0 (parent -1)\n  var fetch_0.tmp_0 : float32[1]");
    FlBundle *cl = fl_ir_bundle_clone(r);
    CU_ASSERT_PTR_NOT_NULL(cl->driver);
    CU_ASSERT_NOT_EQUAL(cl->driver, r->driver);
    fl_ir_bundle_free(cl);
    fl_ir_bundle_free(r);
    /* a broken driver is refused, and says it is the driver */
    fl_ir_op_set_block(op, "sub_block", 7);
    CU_ASSERT_EQUAL(fl_ir_validate_bundle(b, &e), FL_ERROR);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "driver program: "));
    fl_ir_bundle_free(b);
}

/* Named programs (Bundle.programs, docs/driver.md "Programs in a bundle") are kept in order, shown
 * and cloned; a bundle with one is format 3 even without a driver; a name that is missing,
 * doubled or the name of one of the bundle's own programs is refused, and so is a broken one. */
static void test_named_programs(void) {
    FlBundle *b = make_bundle();
    FlErr e = {{0}};
    fl_ir_bundle_add_program(b, "program_1", fl_ir_program_clone(b->main));
    fl_ir_bundle_add_program(b, "program_2", fl_ir_program_new());
    int64_t one = 1;
    var(fl_ir_block(b->programs.data[1].program, 0), "z", FL_DT_INT64, 1, &one);
    CU_ASSERT_EQUAL(fl_ir_format_version(b, NULL), 3);
    CU_ASSERT_EQUAL(fl_ir_validate_bundle(b, &e), FL_OK);
    CU_ASSERT_PTR_EQUAL(fl_ir_bundle_program(b, "program_2"), b->programs.data[1].program);
    CU_ASSERT_PTR_EQUAL(fl_ir_bundle_program(b, "main"), b->main);
    CU_ASSERT_PTR_NULL(fl_ir_bundle_program(b, "program_3"));
    /* in memory as in a file (a version-2 writer would drop them: the file says 3) */
    size_t n;
    uint8_t *d = fl_ir_encode_bundle(b, &n);
    FlBundle *r = NULL;
    FlPlan *p = NULL;
    CU_ASSERT_EQUAL_FATAL(fl_ir_decode(d, n, &r, &p, &e), FL_OK);
    free(d);
    CU_ASSERT_EQUAL_FATAL(r->programs.len, 2);
    CU_ASSERT_STRING_EQUAL(r->programs.data[0].name, "program_1");
    CU_ASSERT_STRING_EQUAL(r->programs.data[1].name, "program_2");
    shown_same(b, r, "== program 'program_2' ==\nblock 0 (parent -1)\n  var z : int64[1]");
    FlBundle *cl = fl_ir_bundle_clone(r);
    CU_ASSERT_EQUAL(cl->programs.len, 2);
    CU_ASSERT_NOT_EQUAL(cl->programs.data[0].program, r->programs.data[0].program);
    shown_same(cl, r, "program 'program_1'");
    fl_ir_bundle_free(cl);
    fl_ir_bundle_free(r);
    static const char *const bad[] = {"main", "startup", "driver", "program_1", ""};
    static const char *const want[] = {"the name of one of the bundle's own", "the name of one of the bundle's own",
                                       "the name of one of the bundle's own", "two named programs are called 'program_1'",
                                       "has no name"};
    for (size_t i = 0; i < FL_ARRAY_LEN(bad); i++) {
        free(b->programs.data[1].name);
        b->programs.data[1].name = fl_xstrdup(bad[i]);
        CU_ASSERT_EQUAL(fl_ir_validate_bundle(b, &e), FL_ERROR);
        CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, want[i]));
    }
    free(b->programs.data[1].name);
    b->programs.data[1].name = fl_xstrdup("program_2");
    FlOpDesc *op = fl_ir_op_append(fl_ir_block(b->programs.data[1].program, 0), "while");
    fl_ir_op_set_block(op, "sub_block", 7);
    CU_ASSERT_EQUAL(fl_ir_validate_bundle(b, &e), FL_ERROR);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "program 'program_2': "));
    fl_ir_bundle_free(b);
}

/* A file stores its readers' directory relative to itself, so a program moved with its data
 * still finds it; --data-dir's hook points every reader elsewhere. */
static void test_relocate(void) {
    char *real = realpath(tmpdir, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(real);
    char p1[512], p2[512], f1[600], f2[600], data[600];
    snprintf(p1, sizeof p1, "%s/proj1", real);
    snprintf(p2, sizeof p2, "%s/proj2", real);
    snprintf(f1, sizeof f1, "%s/build/m.flp", p1);
    snprintf(f2, sizeof f2, "%s/build/m.flp", p2);
    snprintf(data, sizeof data, "%s/build", p1);
    CU_ASSERT_EQUAL_FATAL(mkdir(p1, 0755), 0);
    CU_ASSERT_EQUAL_FATAL(mkdir(data, 0755), 0);
    FlBundle *b = make_bundle();
    free(b->run.reader->base_dir);
    b->run.reader->base_dir = strdup(p1); /* the .fl was in proj1, the .flp goes to proj1/build */
    FlErr e = {{0}};
    CU_ASSERT_EQUAL_FATAL(fl_ir_bundle_write(b, f1, &e), FL_OK);
    size_t len;
    char *bytes = fl_read_file(f1, &len, &e);
    FlBundle *raw = NULL;
    FlPlan *pl = NULL;
    CU_ASSERT_EQUAL_FATAL(fl_ir_decode((const uint8_t *)bytes, len, &raw, &pl, &e), FL_OK);
    CU_ASSERT_STRING_EQUAL(raw->run.reader->base_dir, ".."); /* stored relative to the file */
    fl_ir_bundle_free(raw);
    free(bytes);
    CU_ASSERT_EQUAL_FATAL(rename(p1, p2), 0); /* move the project */
    FlBundle *r = NULL;
    CU_ASSERT_EQUAL_FATAL(fl_ir_read(f2, &r, &pl, &e), FL_OK);
    CU_ASSERT_STRING_EQUAL(r->run.reader->base_dir, p2);
    fl_ir_bundle_set_data_dir(r, "/data/on/this/host");
    CU_ASSERT_STRING_EQUAL(r->run.reader->base_dir, "/data/on/this/host");
    fl_ir_bundle_free(r);
    /* an absolute directory in a file (as older files hold) stays as it is */
    uint8_t *old = fl_ir_encode_bundle(b, &len);
    FILE *f = fopen(f2, "wb");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    fwrite(old, 1, len, f);
    fclose(f);
    free(old);
    CU_ASSERT_EQUAL_FATAL(fl_ir_read(f2, &r, &pl, &e), FL_OK);
    CU_ASSERT_STRING_EQUAL(r->run.reader->base_dir, p1);
    fl_ir_bundle_free(r);
    fl_ir_bundle_free(b);
    free(real);
}

static void test_plan_round_trip(void) {
    FlPlan *pl = make_plan();
    FlErr e = {{0}};
    CU_ASSERT_EQUAL(fl_ir_validate_plan(pl, &e), FL_OK);
    const char *path = tmp_path("rt.plan");
    CU_ASSERT_EQUAL_FATAL(fl_ir_plan_write(pl, path, &e), FL_OK);
    FlBundle *b = NULL;
    FlPlan *r = NULL;
    CU_ASSERT_EQUAL(fl_ir_read(path, &b, &r, &e), FL_OK);
    CU_ASSERT_PTR_NULL(b);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r);
    CU_ASSERT_TRUE(plan_eq(pl, r));
    char *s1 = show_plan(pl), *s2 = show_plan(r);
    CHECK_STR(s2, s1);
    CU_ASSERT_PTR_NOT_NULL(strstr(s1, "=== role trainer 0 (rank 1) ===\nbundle: role trainer, index 0\n"));
    CU_ASSERT_PTR_NOT_NULL(strstr(s1, "=== role pserver 0 (rank 0) ===\n"));
    CU_ASSERT_PTR_NOT_NULL(strstr(s1, "plan: mode sync, pservers 1, trainers 2\n"
                                      "ranks: 0 -> pserver 0, 1 -> trainer 0, 2 -> trainer 1\n"));
    free(s1);
    free(s2);
    fl_ir_plan_free(r);
    fl_ir_plan_free(pl);
}

/* protoc reads our files with our .proto (the format is plain protobuf). */
static void test_protoc_decode(void) {
    const char *protoc = system("command -v protoc >/dev/null 2>&1") == 0 ? "protoc"
                         : system("command -v protoc-c >/dev/null 2>&1") == 0 ? "protoc-c"
                                                                               : NULL;
    if (!protoc) {
        fprintf(stderr, "(no protoc: skipped) ");
        return;
    }
    FlBundle *b = make_small();
    FlErr e;
    const char *path = tmp_path("decode.flp"), *txt = tmp_path("decode.txt");
    CU_ASSERT_EQUAL_FATAL(fl_ir_bundle_write(b, path, &e), FL_OK);
    char cmd[1400];
    snprintf(cmd, sizeof cmd, "%s --proto_path=compiler/ir --decode=fluidc.FlFile fluid.proto < %s > %s",
             protoc, path, txt);
    CU_ASSERT_EQUAL(system(cmd), 0);
    size_t len;
    char *text = fl_read_file(txt, &len, &e);
    CU_ASSERT_PTR_NOT_NULL_FATAL(text);
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "magic: \"fluidc\"\nversion: 2\nbundle {"));
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "type: \"scale\""));
    free(text);
    fl_ir_bundle_free(b);
}

static FlStatus decode_buf(const uint8_t *d, size_t n, FlErr *e) {
    FlBundle *b = NULL;
    FlPlan *p = NULL;
    FlStatus st = fl_ir_decode(d, n, &b, &p, e);
    if (st == FL_OK) {
        CU_ASSERT_TRUE((b != NULL) != (p != NULL));
    } else {
        CU_ASSERT_TRUE(b == NULL && p == NULL);
    }
    fl_ir_bundle_free(b);
    fl_ir_plan_free(p);
    return st;
}

static void test_truncated(void) {
    FlBundle *b = make_small();
    size_t n;
    uint8_t *d = fl_ir_encode_bundle(b, &n);
    FlErr e;
    CU_ASSERT_EQUAL(decode_buf(d, n, &e), FL_OK);
    /* every strict prefix is refused (the bundle is the last field and length-delimited) */
    for (size_t k = 0; k < n; k++) {
        uint8_t *c = malloc(k ? k : 1); /* exactly k bytes, so ASan sees any over-read */
        memcpy(c, d, k);
        e.msg[0] = 0;
        CU_ASSERT_EQUAL(decode_buf(c, k, &e), FL_ERROR);
        CU_ASSERT(e.msg[0] != 0);
        free(c);
    }
    CU_ASSERT_EQUAL(decode_buf(d, 0, &e), FL_ERROR);
    CHECK_STR(e.msg, "input is empty (not a fluidc file)");
    CU_ASSERT_EQUAL(decode_buf(d, n - 1, &e), FL_ERROR);
    CHECK_STR(e.msg, "input is truncated or corrupt (it does not parse as a fluidc file)");
    CU_ASSERT_EQUAL(decode_buf(d, 3, &e), FL_ERROR);
    CHECK_STR(e.msg, "input is not a fluidc file");

    /* through a file: the message names it */
    FlErr fe;
    const char *path = tmp_path("trunc.flp");
    CU_ASSERT_EQUAL(fl_write_file(path, d, n / 2, &fe), FL_OK);
    FlBundle *rb;
    FlPlan *rp;
    CU_ASSERT_EQUAL(fl_ir_read(path, &rb, &rp, &e), FL_ERROR);
    char want[700];
    snprintf(want, sizeof want, "'%s' is truncated or corrupt (it does not parse as a fluidc file)",
             path);
    CHECK_STR(e.msg, want);
    CU_ASSERT_EQUAL(fl_write_file(path, "", 0, &fe), FL_OK);
    CU_ASSERT_EQUAL(fl_ir_read(path, &rb, &rp, &e), FL_ERROR);
    snprintf(want, sizeof want, "'%s' is empty (not a fluidc file)", path);
    CHECK_STR(e.msg, want);
    free(d);
    fl_ir_bundle_free(b);
}

static void test_corrupt(void) {
    FlBundle *b = make_small();
    size_t n;
    uint8_t *d = fl_ir_encode_bundle(b, &n);
    uint8_t *c = malloc(n);
    FlErr e;
    size_t ok = 0;
    /* every byte replaced by several values: an error or a valid bundle, never a crash */
    const uint8_t vals[] = {0x00, 0x01, 0x7f, 0x80, 0xff};
    for (size_t i = 0; i < n; i++) {
        for (size_t v = 0; v < sizeof vals + 1; v++) {
            memcpy(c, d, n);
            c[i] = v < sizeof vals ? vals[v] : (uint8_t)(d[i] ^ 0x55);
            if (decode_buf(c, n, &e) == FL_OK) ok++;
        }
    }
    CU_ASSERT(ok > 0); /* e.g. a changed character inside a name */
    /* pseudo-random garbage */
    uint32_t seed = 12345;
    for (int t = 0; t < 2000; t++) {
        size_t len = (size_t)(t % 97);
        for (size_t i = 0; i < len && i < n; i++) {
            seed = seed * 1103515245u + 12345u;
            c[i] = (uint8_t)(seed >> 16);
        }
        (void)decode_buf(c, len < n ? len : n, &e);
    }
    free(c);
    free(d);
    fl_ir_bundle_free(b);
}

static void test_header_errors(void) {
    FlBundle *b = make_small();
    FlPlan *pl = make_plan();
    FlErr e;
    size_t n;
    uint8_t *d;

    d = fl_ir_encode_file_raw("fluidX", 1, b, NULL, &n);
    CU_ASSERT_EQUAL(decode_buf(d, n, &e), FL_ERROR);
    CHECK_STR(e.msg, "input is not a fluidc file");
    free(d);
    d = fl_ir_encode_file_raw(NULL, 1, b, NULL, &n);
    CU_ASSERT_EQUAL(decode_buf(d, n, &e), FL_ERROR);
    CHECK_STR(e.msg, "input is not a fluidc file");
    free(d);
    d = fl_ir_encode_file_raw(FL_IR_MAGIC, 0, b, NULL, &n);
    CU_ASSERT_EQUAL(decode_buf(d, n, &e), FL_ERROR);
    CHECK_STR(e.msg, "input has no valid format version");
    free(d);
    d = fl_ir_encode_file_raw(FL_IR_MAGIC, 1, b, pl, &n);
    CU_ASSERT_EQUAL(decode_buf(d, n, &e), FL_ERROR);
    CHECK_STR(e.msg, "input holds both a bundle and a plan (a file holds exactly one)");
    free(d);
    d = fl_ir_encode_file_raw(FL_IR_MAGIC, 1, NULL, NULL, &n);
    CU_ASSERT_EQUAL(decode_buf(d, n, &e), FL_ERROR);
    CHECK_STR(e.msg, "input holds neither a bundle nor a plan (truncated?)");
    free(d);

    /* a newer version, through a file */
    d = fl_ir_encode_bundle_version(b, 7, &n);
    const char *path = tmp_path("x.flp");
    FlErr we;
    CU_ASSERT_EQUAL(fl_write_file(path, d, n, &we), FL_OK);
    free(d);
    FlBundle *rb;
    FlPlan *rp;
    CU_ASSERT_EQUAL(fl_ir_read(path, &rb, &rp, &e), FL_ERROR);
    CU_ASSERT_TRUE(rb == NULL && rp == NULL);
    char want[700];
    snprintf(want, sizeof want,
             "'%s' was written by a newer fluidc (format version 7; this one reads up to %d)", path, FL_IR_FORMAT_VERSION);
    CHECK_STR(e.msg, want);
    /* the current version reads */
    d = fl_ir_encode_bundle_version(b, FL_IR_FORMAT_VERSION, &n);
    CU_ASSERT_EQUAL(decode_buf(d, n, &e), FL_OK);
    free(d);

    /* not protobuf at all: a source file */
    CU_ASSERT_EQUAL(fl_write_file(path, "import fluid\nx = 1\n", 19, &we), FL_OK);
    CU_ASSERT_EQUAL(fl_ir_read(path, &rb, &rp, &e), FL_ERROR);
    snprintf(want, sizeof want, "'%s' is not a fluidc file", path);
    CHECK_STR(e.msg, want);

    /* missing file, unwritable path */
    CU_ASSERT_EQUAL(fl_ir_read("/nonexistent/dir/m.flp", &rb, &rp, &e), FL_ERROR);
    CHECK_STR(e.msg, "cannot open '/nonexistent/dir/m.flp': No such file or directory");
    CU_ASSERT_EQUAL(fl_ir_bundle_write(b, "/nonexistent/dir/m.flp", &e), FL_ERROR);
    CHECK_STR(e.msg, "cannot write '/nonexistent/dir/m.flp': No such file or directory");
    fl_ir_plan_free(pl);
    fl_ir_bundle_free(b);
}

/* Encodes b (without validating), decodes it, expects `want` from the decoder. */
static void expect_decode_error(const FlBundle *b, const char *want) {
    size_t n;
    uint8_t *d = fl_ir_encode_bundle(b, &n);
    FlErr e = {{0}};
    CU_ASSERT_EQUAL(decode_buf(d, n, &e), FL_ERROR);
    CHECK_STR(e.msg, want);
    free(d);
}

static void expect_invalid(const FlBundle *b, const char *want) {
    FlErr e = {{0}};
    CU_ASSERT_EQUAL(fl_ir_validate_bundle(b, &e), FL_ERROR);
    CHECK_STR(e.msg, want);
}

static void test_invalid_programs(void) {
    FlBundle *b = make_small();
    FlBlock *b0 = fl_ir_block(b->main, 0), *b1 = fl_ir_block(b->main, 1);
    FlOpDesc *cond = b0->ops.data[1];
    FlErr e;

    /* block references */
    fl_ir_op_set_block(cond, "sub_block", 5);
    const char *m5 = "main program: block 0, op 'conditional_block': attribute 'sub_block' names "
                     "block 5, which does not exist (sub-blocks are 1..1)";
    expect_invalid(b, m5);
    char want[1100];
    snprintf(want, sizeof want, "input is invalid: %s", m5);
    expect_decode_error(b, want);
    const char *path = tmp_path("bad.flp");
    CU_ASSERT_EQUAL(fl_ir_bundle_write(b, path, &e), FL_ERROR);
    snprintf(want, sizeof want, "not writing '%s': the bundle is invalid: %s", path, m5);
    CHECK_STR(e.msg, want);
    fl_ir_op_set_block(cond, "sub_block", 0);
    expect_decode_error(b, "input is invalid: main program: block 0, op 'conditional_block': "
                           "attribute 'sub_block' names block 0, which does not exist "
                           "(sub-blocks are 1..1)");
    fl_ir_op_set_blocks(cond, "sub_block", (int64_t[]){1, -1}, 2);
    expect_invalid(b, "main program: block 0, op 'conditional_block': attribute 'sub_block' "
                      "names block -1, which does not exist (sub-blocks are 1..1)");
    fl_ir_op_set_block(cond, "sub_block", 1);
    CU_ASSERT_EQUAL(fl_ir_validate_bundle(b, &e), FL_OK);
    /* a sub-block naming itself would recurse forever at run time */
    FlOpDesc *loop = fl_ir_op_append(b1, "while");
    fl_ir_op_set_block(loop, "sub_block", 1);
    expect_decode_error(b, "input is invalid: main program: block 1, op 'while': attribute "
                           "'sub_block' names block 1, which does not come after the op's own "
                           "block");
    fl_ir_op_remove(b1, b1->ops.len - 1);

    /* parents */
    b1->parent = 1;
    expect_decode_error(b, "input is invalid: main program: block 1 has parent 1, which is not an "
                           "earlier block");
    b1->parent = 0;
    b0->parent = 0;
    expect_decode_error(b, "input is invalid: main program: block 0 has parent 0 (block 0 has "
                           "none: -1)");
    b0->parent = -1;

    /* vars: enums, rank, dims, location */
    FlVarDesc *x = fl_ir_var_find(b0, "x");
    x->dtype = (FlDType)9;
    expect_decode_error(b, "input is invalid: main program: block 0, var 'x': unknown dtype 9");
    x->dtype = FL_DT_FLOAT32;
    x->kind = FL_VAR_KIND_COUNT;
    expect_decode_error(b, "input is invalid: main program: block 0, var 'x': unknown var kind 5");
    x->kind = FL_VAR_DENSE;
    x->ndim = 9;
    expect_invalid(b, "main program: block 0, var 'x': rank 9 is not in 0..8");
    x->ndim = 2;
    x->shape[1] = -2;
    expect_decode_error(b, "input is invalid: main program: block 0, var 'x': dimension 1 is -2 "
                           "(must be >= -1)");
    x->shape[1] = 2;
    x->loc = (FlLoc){1, 2, 3, 4};
    expect_decode_error(b, "input is invalid: main program: block 0, var 'x': location names "
                           "source file 1, but there are 1");
    x->loc = FL_LOC_NONE;
    cond->loc = (FlLoc){-5, 1, 1, 1};
    expect_invalid(b, "main program: block 0, op 'conditional_block': location names source "
                      "file -5, but there are 1");
    cond->loc = FL_LOC_NONE;

    /* names and attributes */
    fl_ir_op_add_input(cond, "Cond", "");
    expect_decode_error(b, "input is invalid: main program: block 0, op 'conditional_block': "
                           "input slot 'Cond' has an empty var name");
    fl_ir_slot_clear(fl_ir_op_input(cond, "Cond"));
    fl_ir_op_set_int(cond, "flag", 1);
    fl_ir_op_attr(cond, "flag")->type = FL_ATTR_BOOL;
    fl_ir_op_attr(cond, "flag")->i = 2;
    expect_decode_error(b, "input is invalid: main program: block 0, op 'conditional_block': "
                           "bool attribute 'flag' is 2, not 0 or 1");
    fl_ir_op_attr(cond, "flag")->type = (FlAttrType)12;
    expect_decode_error(b, "input is invalid: main program: block 0, op 'conditional_block': "
                           "attribute 'flag' has an unknown type 12");
    fl_ir_op_set_int(cond, "flag", 1);
    FlOpDesc *anon = fl_ir_op_append(b0, "");
    expect_decode_error(b, "input is invalid: main program: block 0: an op has no type");
    fl_ir_op_remove(b0, b0->ops.len - 1);
    (void)anon;
    CU_ASSERT_EQUAL(fl_ir_validate_bundle(b, &e), FL_OK);

    /* startup program, sources, role, run spec */
    FlVarDesc *sv = fl_ir_var_add(fl_ir_block(b->startup, 0), "s");
    sv->capacity = -1;
    expect_decode_error(b, "input is invalid: startup program: block 0, var 's': negative channel "
                           "capacity -1");
    sv->capacity = 0;
    sv->elem_chans = 1; /* nested channels in a tensor var */
    expect_decode_error(b, "input is invalid: startup program: block 0, var 's': elem_chans 1 (0..8, "
                           "channels only)");
    sv->elem_chans = 0;
    sv->dtype = FL_DT_FLOAT32;
    fl_ir_var_set_lod(sv, 1, (const char *const[]){"nowhere"}); /* offsets that are no var */
    expect_decode_error(b, "input is invalid: startup program: block 0, var 's': its LoD level 0, 'nowhere', is not "
                           "a var (an int64 vector of offsets is needed)");
    fl_ir_var_set_lod(sv, 1, (const char *const[]){"s"}); /* offsets that are not int64 */
    expect_decode_error(b, "input is invalid: startup program: block 0, var 's': its LoD level 0, 's', is not an "
                           "int64 vector (an int64 vector of offsets is needed)");
    fl_ir_var_set_lod(sv, 0, NULL);
    free(b->role);
    b->role = strdup("");
    expect_decode_error(b, "input is invalid: the bundle has no role");
    free(b->role);
    b->role = strdup("local");
    b->run.present = true;
    FL_VEC_PUSH(&b->run.fetch_names, strdup("loss"));
    expect_decode_error(b, "input is invalid: run spec: 1 fetch names but 0 fetch vars");
    FL_VEC_PUSH(&b->run.fetch_vars, strdup("y"));
    b->run.reader = make_reader("d.csv", FL_PART_ALL);
    b->run.reader->split_fraction = 1.5;
    expect_decode_error(b, "input is invalid: run spec reader: split fraction 1.5 is not in [0, 1]");
    b->run.reader->split_fraction = 0.5;
    b->run.reader->feeds.data[1].cols[0] = -4;
    expect_decode_error(b, "input is invalid: run spec reader: feed 'y' has a negative column -4");
    b->run.reader->feeds.data[1].cols[0] = 4;
    b->run.reader->feeds.data[2].lod_level = -1;
    expect_decode_error(b, "input is invalid: run spec reader: feed 'w' has lod_level -1 and 1 columns (a sequence reads one)");
    b->run.reader->feeds.data[2].lod_level = 1;
    b->run.reader->part = (FlReaderPart)3;
    expect_decode_error(b, "input is invalid: run spec reader: unknown reader part 3");
    b->run.reader->part = FL_PART_TRAIN;
    FL_VEC_PUSH(&b->run.reader->scale_factors, 2.0);
    expect_invalid(b, "run spec reader: 1 scaled feeds but 2 scale factors");
    b->run.reader->scale_factors.len = 1;
    CU_ASSERT_EQUAL(fl_ir_validate_bundle(b, &e), FL_OK);
    b->run.profile = (FlProfileSpec){true, strdup("GPU"), NULL, NULL};
    expect_decode_error(b, "input is invalid: run spec: profiler state 'GPU' (this runtime times 'CPU' only)");
    strcpy(b->run.profile.state, "CPU");
    b->run.profile.sorted_key = strdup("Total");
    expect_decode_error(b, "input is invalid: run spec: unknown profiler sorted_key 'Total'");
    strcpy(b->run.profile.sorted_key, "total");
    CU_ASSERT_EQUAL(fl_ir_validate_bundle(b, &e), FL_OK);
    b->run.present = false;
    expect_invalid(b, "run spec: a profile but no training to profile");
    b->run.present = true;

    /* a program with no blocks */
    FlProgram *none = fl_ir_program_new();
    none->blocks.len = 0; /* (block 0 freed by hand below) */
    CU_ASSERT_EQUAL(fl_ir_validate_program(none, 0, &e), FL_ERROR);
    CHECK_STR(e.msg, "the program has no blocks (block 0 is required)");
    none->blocks.len = 1;
    fl_ir_program_free(none);
    fl_ir_bundle_free(b);
}

static void test_invalid_plans(void) {
    FlPlan *p = make_plan();
    FlErr e;
    size_t n;
    uint8_t *d;
#define EXPECT_PLAN(want)                                                                 \
    do {                                                                                  \
        CU_ASSERT_EQUAL(fl_ir_validate_plan(p, &e), FL_ERROR);                            \
        CHECK_STR(e.msg, want);                                                           \
        d = fl_ir_encode_plan(p, &n);                                                     \
        CU_ASSERT_EQUAL(decode_buf(d, n, &e), FL_ERROR);                                  \
        CHECK_STR(e.msg, "input is invalid: " want);                                      \
        free(d);                                                                          \
    } while (0)
    p->rank_role.data[1] = 3;
    EXPECT_PLAN("rank 1 maps to role 3, but the plan has roles 0..2");
    p->rank_role.data[1] = -1;
    EXPECT_PLAN("rank 1 maps to role -1, but the plan has roles 0..2");
    p->rank_role.data[1] = 0;
    p->pservers = 2;
    EXPECT_PLAN("the plan has 3 roles for 2 trainers and 2 pservers");
    p->pservers = 1;
    p->trainers = 0;
    EXPECT_PLAN("the plan has 0 trainers (at least 1 is needed)");
    p->trainers = 2;
    fl_ir_block(p->roles.data[1]->main, 1)->parent = 7;
    EXPECT_PLAN("role 1: main program: block 1 has parent 7, which is not an earlier block");
    fl_ir_block(p->roles.data[1]->main, 1)->parent = 0;
    size_t nr = p->rank_role.len;
    p->rank_role.len = 0;
    EXPECT_PLAN("the plan has an empty rank map");
    p->rank_role.len = nr;
    /* the rank map must fit the roles: one rank each (the job's size is the map's), in order */
    p->rank_role.len = nr - 1;
    EXPECT_PLAN("the plan's rank map has 2 ranks for 3 roles (2 trainers + 1 pservers): one rank per role");
    p->rank_role.len = nr;
    FL_VEC_PUSH(&p->rank_role, 1);
    EXPECT_PLAN("the plan's rank map has 4 ranks for 3 roles (2 trainers + 1 pservers): one rank per role");
    p->rank_role.len = nr;
    p->rank_role.data[1] = 1;
    p->rank_role.data[2] = 0;
    EXPECT_PLAN("rank 1 maps to role 1 (trainer 1); expected trainer 0: the rank map numbers each kind in rank "
                "order, each role once");
    p->rank_role.data[1] = 0;
    EXPECT_PLAN("rank 2 maps to role 0 (trainer 0); expected trainer 1: the rank map numbers each kind in rank "
                "order, each role once");
    p->rank_role.data[2] = 1;
    p->roles.data[1]->role_index = 0;
    EXPECT_PLAN("role 1 is trainer 0; expected trainer 1 (trainers first, then pservers)");
    p->roles.data[1]->role_index = 1;
    free(p->mode);
    p->mode = strdup("bogus");
    EXPECT_PLAN("the plan's mode is 'bogus'; expected sync, async or allreduce");
    free(p->mode);
    p->mode = strdup("allreduce");
    EXPECT_PLAN("the plan's mode is allreduce but it has 1 pservers (allreduce has none)");
    free(p->mode);
    p->mode = strdup("sync");
    CU_ASSERT_EQUAL(fl_ir_validate_plan(p, &e), FL_OK);
    const char *path = tmp_path("bad.plan");
    p->trainers = 5;
    CU_ASSERT_EQUAL(fl_ir_plan_write(p, path, &e), FL_ERROR);
    char want[700];
    snprintf(want, sizeof want, "not writing '%s': the plan is invalid: the plan has 3 roles for "
             "5 trainers and 1 pservers", path);
    CHECK_STR(e.msg, want);
    fl_ir_plan_free(p);
    FlPlan *empty = fl_ir_plan_new();
    empty->trainers = 1;
    CU_ASSERT_EQUAL(fl_ir_validate_plan(empty, &e), FL_ERROR);
    CHECK_STR(e.msg, "the plan has no roles");
    fl_ir_plan_free(empty);
#undef EXPECT_PLAN
}

/* ---- show ---- */

/* SelectedRows vars: written as version 2 (as every file), read back with their kind, and listed
 * as selected_rows<...>. */
static void test_selected_rows_format(void) {
    FlBundle *b = make_small();
    size_t n;
    uint8_t *d = fl_ir_encode_bundle(b, &n);
    CU_ASSERT_EQUAL(fl_ir_format_version(b, NULL), 2);
    CU_ASSERT_TRUE(n > 9 && d[8] == 0x10 && d[9] == 2); /* field 2 (version) after the magic */
    free(d);
    FlVarDesc *g = var(fl_ir_block(b->main, 0), "w@GRAD", FL_DT_FLOAT32, 2, (int64_t[]){10, 4});
    g->kind = FL_VAR_SELECTED_ROWS;
    CU_ASSERT_EQUAL(fl_ir_format_version(b, NULL), 2);
    d = fl_ir_encode_bundle(b, &n);
    CU_ASSERT_TRUE(n > 9 && d[8] == 0x10 && d[9] == 2);
    FlBundle *rb = NULL;
    FlPlan *rp = NULL;
    FlErr e = {{0}};
    CU_ASSERT_EQUAL_FATAL(fl_ir_decode(d, n, &rb, &rp, &e), FL_OK);
    FlVarDesc *rg = fl_ir_var_find(fl_ir_block(rb->main, 0), "w@GRAD");
    CU_ASSERT_TRUE_FATAL(rg != NULL);
    CU_ASSERT_EQUAL(rg->kind, FL_VAR_SELECTED_ROWS);
    char *s = show_bundle(rb);
    CU_ASSERT_PTR_NOT_NULL(strstr(s, "var w@GRAD : selected_rows<float32[10, 4]>"));
    free(s);
    fl_ir_bundle_free(rb);
    free(d);
    fl_ir_bundle_free(b);
}

static void test_show_golden(void) {
    FlBundle *b = make_small();
    b->run.present = true;
    b->run.batch_size = 8;
    b->run.epochs = 2;
    b->run.reader = make_reader("data/d.csv", FL_PART_TRAIN);
    FL_VEC_PUSH(&b->run.fetch_names, strdup("out"));
    FL_VEC_PUSH(&b->run.fetch_vars, strdup("y"));
    b->run.profile = (FlProfileSpec){true, strdup("CPU"), NULL, strdup("p.json")};
    FlBlock *s0 = fl_ir_block(b->startup, 0);
    FlVarDesc *w = fl_ir_var_add(s0, "w");
    w->persistable = w->trainable = true;
    fl_ir_var_set_shape(w, 1, (int64_t[]){3});
    FlVarDesc *ch = fl_ir_var_add(s0, "ch");
    ch->kind = FL_VAR_CHANNEL;
    ch->dtype = FL_DT_INT64;
    FlOpDesc *f = fl_ir_op_append(s0, "fill_constant");
    fl_ir_op_add_output(f, "Out", "w");
    fl_ir_op_set_floats(f, "values", (double[]){0.5, 1e-07}, 2);
    fl_ir_op_set_strings(f, "names", (const char *const[]){"a\"b"}, 1);
    fl_ir_op_set_ints(f, "shape", (int64_t[]){3}, 1);
    fl_ir_op_set_blocks(f, "blocks", NULL, 0);
    char *s = show_bundle(b);
    CHECK_STR(s,
              "bundle: role local, index 0\n"
              "sources: [0] dir/small.fl\n"
              "== startup program ==\n"
              "block 0 (parent -1)\n"
              "  var w : float32[3]  persistable trainable\n"
              "  var ch : chan<int64> cap 0\n"
              "  op fill_constant  -> Out=[w]  {blocks=blocks [], names=[\"a\\\"b\"], "
              "shape=[3], values=[0.5, 1e-07]}\n"
              "== main program ==\n"
              "block 0 (parent -1)\n"
              "  var x : float32[-1, 2]  stop_gradient\n"
              "  var y : float32[-1, 2]\n"
              "  op scale  X=[x] -> Out=[y]  {bias_after_scale=true, scale=2.5}  @ small.fl:4:7\n"
              "  op conditional_block  Cond=[x]  {sub_block=block 1}\n"
              "block 1 (parent 0)\n"
              "  op print  In=[y]  {message=\"y:\"}\n"
              "== run spec ==\n"
              "batch_size 8, epochs 2, seed 0\n"
              "reader: \"data/d.csv\" in \"/nonexistent/project/examples\", skip_rows 1, sep \",\"\n"
              "  feed x : float32 cols [0, 1, 2]\n"
              "  feed y : int64 cols [13]\n"
              "  feed w : int64 cols [3] lod_level 2\n"
              "  normalize [x]\n"
              "  scale [x * 0.25]\n"
              "  split fraction 0.8 seed 7, part train\n"
              "fetch: out -> y\n"
              "profile: CPU, sorted_key None, profile_path p.json\n");
    free(s);
    fl_ir_bundle_free(b);

    /* no run spec; a program shown alone without a source table */
    b = fl_ir_bundle_new();
    s = show_bundle(b);
    CHECK_STR(s, "bundle: role local, index 0\nsources:\n== startup program ==\nblock 0 (parent -1)\n"
                 "== main program ==\nblock 0 (parent -1)\n== run spec ==\n"
                 "none (startup, then main once)\n");
    free(s);
    FlOpDesc *op = fl_ir_op_append(fl_ir_block(b->main, 0), "relu");
    op->loc = (FlLoc){2, 5, 6, 1};
    FlBuf out = {0};
    fl_ir_show_program(b->main, "main program", NULL, &out);
    CHECK_STR(fl_buf_str(&out), "== main program ==\nblock 0 (parent -1)\n  op relu  @ <source 2>:5:6\n");
    fl_buf_free(&out);
    fl_ir_bundle_free(b);
}

/* ---- dot ---- */

static bool have_dot(void) {
    return system("command -v dot >/dev/null 2>&1") == 0;
}

/* Runs `dot -Tsvg` on text; true if it exits 0 without a word on stderr. */
static bool dot_accepts(const char *text, const char *name) {
    FlErr e;
    const char *in = tmp_path(name), *err = tmp_path("dot.err");
    if (fl_write_file(in, text, strlen(text), &e) != FL_OK) return false;
    char cmd[1400];
    snprintf(cmd, sizeof cmd, "dot -Tsvg %s > /dev/null 2> %s", in, err);
    int rc = system(cmd);
    size_t len = 0;
    char *msg = fl_read_file(err, &len, &e);
    if (rc != 0 || len) fprintf(stderr, "\ndot said (rc %d): %s\n", rc, msg ? msg : "?");
    free(msg);
    return rc == 0 && len == 0;
}

static void test_dot(void) {
    FlBundle *b = make_bundle();
    /* names that need escaping */
    FlBlock *b0 = fl_ir_block(b->main, 0), *b2 = fl_ir_block(b->main, 2);
    fl_ir_var_add(b0, "we\"ird.name@GRAD");
    fl_ir_var_add(b0, "back\\slash\\N");
    fl_ir_var_add(b0, "new\nline \xc3\xa9 \xff");
    FlOpDesc *op = fl_ir_op_append(b2, "odd\"op");
    fl_ir_op_add_input(op, "X\"", "we\"ird.name@GRAD");
    fl_ir_op_add_input(op, "X\"", "back\\slash\\N");
    fl_ir_op_add_output(op, "Out", "new\nline \xc3\xa9 \xff");
    fl_ir_op_add_output(op, "Out", "undeclared \"here\"");
    FlBuf out = {0};
    fl_ir_dot_bundle(b, &out);
    const char *s = fl_buf_str(&out);
    CU_ASSERT_PTR_NOT_NULL(strstr(s, "subgraph cluster_main_2 {"));
    CU_ASSERT_PTR_NOT_NULL(strstr(s, "subgraph cluster_startup_0 {"));
    CU_ASSERT_PTR_NOT_NULL(strstr(s, "label=\"we\\\"ird.name@GRAD\\nfloat32[]\""));
    CU_ASSERT_PTR_NOT_NULL(strstr(s, "main_b0_op2 -> main_b1_anchor [style=dashed, lhead=cluster_main_1"));
    CU_ASSERT_PTR_NOT_NULL(strstr(s, "main_b0_op3 -> main_b4_anchor [style=dashed, lhead=cluster_main_4"));
    CU_ASSERT_PTR_NOT_NULL(strstr(s, "main_b2_u0"));
    /* a var used in a sub-block links to its node in the declaring block */
    CU_ASSERT_PTR_NOT_NULL(strstr(s, "main_b0_v3 -> main_b2_op0 [label=\"Channel\"]"));
    if (have_dot()) {
        CU_ASSERT_TRUE(dot_accepts(s, "bundle.dot"));
    } else {
        fprintf(stderr, "(no dot: skipped) ");
    }
    fl_buf_free(&out);

    FlPlan *p = make_plan();
    fl_ir_dot_plan(p, &out);
    CU_ASSERT_PTR_NOT_NULL(strstr(fl_buf_str(&out), "subgraph cluster_r2_main_3 {"));
    if (have_dot()) {
        CU_ASSERT_TRUE(dot_accepts(fl_buf_str(&out), "plan.dot"));
    }
    fl_buf_free(&out);
    fl_ir_plan_free(p);
    fl_ir_bundle_free(b);
}

/* ---- size ---- */

/* CPU time of this process: the test checks growth, which other processes' load must not skew */
static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* n fc layers in one block: per layer 2 ops and 4 vars; returns the seconds for build, write,
 * read, compare, show and dot. */
static double big_round_trip(int layers) {
    double t0 = now();
    FlBundle *b = fl_ir_bundle_new();
    FL_VEC_PUSH(&b->source_paths, strdup("big.fl"));
    FlBlock *b0 = fl_ir_block(b->main, 0);
    char in[64], w[64], t[64], out[64];
    snprintf(in, sizeof in, "x");
    fl_ir_var_add(b0, "x");
    for (int i = 0; i < layers; i++) {
        snprintf(w, sizeof w, "fc_%d.w_0", i);
        snprintf(t, sizeof t, "fc_%d.tmp_0", i);
        snprintf(out, sizeof out, "fc_%d.tmp_1", i);
        FlVarDesc *wv = fl_ir_var_add(b0, w);
        fl_ir_var_set_shape(wv, 2, (int64_t[]){16, 16});
        wv->persistable = wv->trainable = true;
        fl_ir_var_add(b0, t)->loc = (FlLoc){0, i + 1, 1, 2};
        fl_ir_var_add(b0, out);
        FlOpDesc *m = fl_ir_op_append(b0, "mul");
        fl_ir_op_add_input(m, "X", in);
        fl_ir_op_add_input(m, "Y", w);
        fl_ir_op_add_output(m, "Out", t);
        fl_ir_op_set_int(m, "x_num_col_dims", 1);
        m->loc = (FlLoc){0, i + 1, 5, 2};
        FlOpDesc *r = fl_ir_op_append(b0, "relu");
        fl_ir_op_add_input(r, "X", t);
        fl_ir_op_add_output(r, "Out", out);
        snprintf(in, sizeof in, "%s", out);
    }
    FlErr e;
    const char *path = tmp_path("big.flp");
    CU_ASSERT_EQUAL(fl_ir_bundle_write(b, path, &e), FL_OK);
    FlBundle *r = NULL;
    FlPlan *p = NULL;
    CU_ASSERT_EQUAL(fl_ir_read(path, &r, &p, &e), FL_OK);
    CU_ASSERT_TRUE(r && bundle_eq(b, r));
    CU_ASSERT_TRUE(r && fl_ir_var_find(fl_ir_block(r->main, 0), "fc_0.w_0") != NULL);
    FlBuf s = {0};
    fl_ir_show_bundle(r, &s);
    fl_ir_dot_bundle(r, &s);
    fl_buf_free(&s);
    fl_ir_bundle_free(r);
    fl_ir_bundle_free(b);
    return now() - t0;
}

static void test_big_program(void) {
    double small = 1e9, big = 1e9; /* best of 3 against noise */
    for (int i = 0; i < 3; i++) {
        double t = big_round_trip(1000);
        small = t < small ? t : small;
        t = big_round_trip(4000);
        big = t < big ? t : big;
    }
    fprintf(stderr, "(1000 layers %.3f s, 4000 layers %.3f s) ", small, big);
    /* linear: 4x the work. A quadratic step would make it 16x; allow noise up to 10x. */
    CU_ASSERT(big < 10 * small + 0.05);
    CU_ASSERT(big < 10.0);
}

/* ---- fuzz seeds ---- */

static void write_seed(const char *name, uint8_t *d, size_t n) {
    char path[512];
    FlErr e;
    snprintf(path, sizeof path, "tests/fuzz/corpus/ir/%s", name);
    if (fl_write_file(path, d, n, &e) != FL_OK) fprintf(stderr, "%s\n", e.msg);
    free(d);
}

static void test_write_corpus(void) {
    const char *w = getenv("FL_IR_WRITE_CORPUS");
    if (!w || strcmp(w, "1") != 0) return;
    size_t n;
    uint8_t *d; /* (not in write_seed's arguments: n must be set before it is read) */
    FlBundle *small = make_small(), *big = make_bundle(), *empty = fl_ir_bundle_new();
    FlPlan *p = make_plan();
    d = fl_ir_encode_bundle(small, &n);
    write_seed("small_bundle.bin", d, n);
    d = fl_ir_encode_bundle(big, &n);
    write_seed("full_bundle.bin", d, n);
    d = fl_ir_encode_bundle(empty, &n);
    write_seed("empty_bundle.bin", d, n);
    d = fl_ir_encode_plan(p, &n);
    write_seed("plan.bin", d, n);
    d = fl_ir_encode_bundle_version(small, 2, &n);
    write_seed("newer_version.bin", d, n);
    d = fl_ir_encode_file_raw(FL_IR_MAGIC, 1, small, p, &n);
    write_seed("both.bin", d, n);
    fl_ir_op_set_block(fl_ir_block(small->main, 0)->ops.data[1], "sub_block", 9);
    d = fl_ir_encode_bundle(small, &n);
    write_seed("bad_block_ref.bin", d, n);
    fl_ir_plan_free(p);
    fl_ir_bundle_free(small);
    fl_ir_bundle_free(big);
    fl_ir_bundle_free(empty);
}

int main(void) {
    snprintf(tmpdir, sizeof tmpdir, "/tmp/test_ir.XXXXXX");
    if (!mkdtemp(tmpdir)) return 1;
    if (CU_initialize_registry() != CUE_SUCCESS) return 1;
    CU_pSuite s = CU_add_suite("ir", NULL, NULL);
    CU_add_test(s, "build api", test_build_api);
    CU_add_test(s, "shape_str", test_shape_str);
    CU_add_test(s, "clone", test_clone);
    CU_add_test(s, "block io", test_block_io);
    CU_add_test(s, "bundle round trip", test_bundle_round_trip);
    CU_add_test(s, "driver round trip", test_driver_round_trip);
    CU_add_test(s, "readers round trip", test_readers_round_trip);
    CU_add_test(s, "reader word dict", test_reader_word_dict);
    CU_add_test(s, "reader wmt16 args", test_reader_wmt16_args);
    CU_add_test(s, "reader multislot", test_reader_multislot);
    CU_add_test(s, "reader ctr", test_reader_ctr);
    CU_add_test(s, "bundle load", test_bundle_load);
    CU_add_test(s, "named programs", test_named_programs);
    CU_add_test(s, "plan round trip", test_plan_round_trip);
    CU_add_test(s, "protoc --decode", test_protoc_decode);
    CU_add_test(s, "truncated", test_truncated);
    CU_add_test(s, "corrupt", test_corrupt);
    CU_add_test(s, "header errors", test_header_errors);
    CU_add_test(s, "invalid programs", test_invalid_programs);
    CU_add_test(s, "invalid plans", test_invalid_plans);
    CU_add_test(s, "show golden", test_show_golden);
    CU_add_test(s, "selected rows format", test_selected_rows_format);
    CU_add_test(s, "dot", test_dot);
    CU_add_test(s, "relocated files", test_relocate);
    CU_add_test(s, "4000-layer program", test_big_program);
    CU_add_test(s, "fuzz seeds", test_write_corpus);
    CU_basic_set_mode(CU_BRM_VERBOSE);
    CU_basic_run_tests();
    unsigned failed = CU_get_number_of_failures();
    CU_cleanup_registry();
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmpdir);
    return failed ? 1 : 0;
}
