/* test_selrows.c: SelectedRows gradients through the executor. lookup_table_grad with is_sparse
 * makes rows = the ids in order (duplicates kept, padding_idx left out) and value = the output
 * gradient rows, whose dense form equals the dense gradient; sum merges SelectedRows (sorted
 * distinct rows, duplicates added) and adds them densified to a dense input; each sparse
 * optimizer (sgd, momentum, adam, adam lazy_mode, adagrad, ftrl) run on a sparse gradient
 * equals the same op run on the dense gradient, in float64, on every row (sgd, momentum, adam,
 * adagrad: the dense update of a zero gradient row is what Fluid's sparse kernels do) or on the
 * touched rows while the others keep their values (lazy adam, ftrl). */
#include "tests/runtime/core/ct.h"

#define V 6
#define D 3
#define N 6
#define PAD 2

static const double ids_v[N] = {4, 1, 4, 0, 2, 4}; /* rows 3 and 5 untouched, 2 is the padding */

static FlVarDesc *var(FlBlock *b, const char *name, FlDType dt, int nd, const int64_t *shape, bool persist) {
    FlVarDesc *v = fl_ir_var_add(b, name);
    v->dtype = dt;
    fl_ir_var_set_shape(v, nd, shape);
    v->persistable = persist;
    return v;
}

typedef struct Opt {
    const char *type;
    const char *states[3]; /* row-shaped state slots */
    const char *outs[3];   /* their output slots */
    bool lazy;
    bool touched_only;     /* the rows no id touched keep their values */
} Opt;

static const Opt opts[] = {
    {"sgd", {NULL}, {NULL}, false, false},
    {"momentum", {"Velocity"}, {"VelocityOut"}, false, false},
    {"adam", {"Moment1", "Moment2"}, {"Moment1Out", "Moment2Out"}, false, false},
    {"adam", {"Moment1", "Moment2"}, {"Moment1Out", "Moment2Out"}, true, true},
    {"adagrad", {"Moment"}, {"MomentOut"}, false, false},
    {"ftrl", {"SquaredAccum", "LinearAccum"}, {"SquaredAccumOut", "LinearAccumOut"}, false, true},
};

/* lookup_table_grad (sparse or not) of W, then the optimizer o (NULL: none) on W with it. */
static FlProgram *build(const Opt *o, bool sparse) {
    FlProgram *p = fl_ir_program_new();
    FlBlock *b = fl_ir_block(p, 0);
    var(b, "W", FL_DT_FLOAT64, 2, (int64_t[]){V, D}, true);
    var(b, "ids", FL_DT_INT64, 2, (int64_t[]){N, 1}, false);
    var(b, "out", FL_DT_FLOAT64, 2, (int64_t[]){N, D}, false);
    var(b, "dout", FL_DT_FLOAT64, 2, (int64_t[]){N, D}, false);
    var(b, "G", FL_DT_FLOAT64, 2, (int64_t[]){V, D}, true)->kind = sparse ? FL_VAR_SELECTED_ROWS : FL_VAR_DENSE;
    FlOpDesc *g = fl_ir_op_append(b, "lookup_table_grad");
    fl_ir_op_add_input(g, "W", "W");
    fl_ir_op_add_input(g, "Ids", "ids");
    fl_ir_op_add_input(g, "Out", "out");
    fl_ir_op_add_input(g, "Out@GRAD", "dout");
    fl_ir_op_add_output(g, "W@GRAD", "G");
    fl_ir_op_set_int(g, "padding_idx", PAD);
    fl_ir_op_set_bool(g, "is_sparse", sparse);
    if (!o) return p;
    var(b, "lr", FL_DT_FLOAT64, 1, (int64_t[]){1}, true);
    FlOpDesc *u = fl_ir_op_append(b, o->type);
    fl_ir_op_add_input(u, "Param", "W");
    fl_ir_op_add_input(u, "Grad", "G");
    fl_ir_op_add_input(u, "LearningRate", "lr");
    fl_ir_op_add_output(u, "ParamOut", "W");
    for (int k = 0; k < 3 && o->states[k]; k++) {
        var(b, o->states[k], FL_DT_FLOAT64, 2, (int64_t[]){V, D}, true);
        fl_ir_op_add_input(u, o->states[k], o->states[k]);
        fl_ir_op_add_output(u, o->outs[k], o->states[k]);
    }
    if (strcmp(o->type, "adam") == 0) {
        var(b, "b1p", FL_DT_FLOAT64, 1, (int64_t[]){1}, true);
        var(b, "b2p", FL_DT_FLOAT64, 1, (int64_t[]){1}, true);
        fl_ir_op_add_input(u, "Beta1Pow", "b1p");
        fl_ir_op_add_input(u, "Beta2Pow", "b2p");
        fl_ir_op_add_output(u, "Beta1PowOut", "b1p");
        fl_ir_op_add_output(u, "Beta2PowOut", "b2p");
        fl_ir_op_set_bool(u, "lazy_mode", o->lazy);
    }
    if (strcmp(o->type, "ftrl") == 0) {
        fl_ir_op_set_float(u, "l1", 0.01);
        fl_ir_op_set_float(u, "l2", 0.1);
    }
    return p;
}

static void set(FlScope *s, const char *name, int nd, const int64_t *ne, const double *v) {
    FlTensor t = ct_tensor(FL_DT_FLOAT64, nd, ne, v);
    fl_scope_set_tensor(s, name, &t);
    fl_tensor_fini(&t);
}

/* A program of o (sparse or dense), its executor and a scope with its start values. */
typedef struct Run {
    FlProgram *p;
    FlExec *ex;
    FlScope *s;
} Run;

static Run start(const Opt *o, bool sparse) {
    Run r = {.p = build(o, sparse), .s = fl_scope_new(NULL)};
    FlErr e = {{0}};
    CT_OK(fl_exec_new(r.p, NULL, 0, NULL, &r.ex, &e), &e);
    double w[V * D], st[V * D];
    for (int i = 0; i < V * D; i++) {
        w[i] = 0.3 * sin(i + 1.0);
        st[i] = 0.05 + 0.01 * i;
    }
    set(r.s, "W", 2, (int64_t[]){V, D}, w);
    set(r.s, "lr", 1, (int64_t[]){1}, (double[]){0.1});
    set(r.s, "b1p", 1, (int64_t[]){1}, (double[]){0.9});
    set(r.s, "b2p", 1, (int64_t[]){1}, (double[]){0.999});
    for (int k = 0; o && k < 3 && o->states[k]; k++) set(r.s, o->states[k], 2, (int64_t[]){V, D}, st);
    return r;
}

/* Training step `step` (its output gradient depends on it). */
static void step(Run *r, int step) {
    FlErr e = {{0}};
    double dout[N * D];
    FlTensor ids = ct_tensor(FL_DT_INT64, 2, (int64_t[]){N, 1}, ids_v);
    for (int i = 0; i < N * D; i++) dout[i] = cos(1.7 * i + step) - 0.2;
    FlTensor out = ct_tensor(FL_DT_FLOAT64, 2, (int64_t[]){N, D}, dout);
    FlTensor dt = ct_tensor(FL_DT_FLOAT64, 2, (int64_t[]){N, D}, dout);
    FlExecFeed f[3] = {{"ids", &ids}, {"out", &out}, {"dout", &dt}};
    CT_OK(fl_exec_run(r->ex, r->s, f, 3, NULL, NULL, 0, 0, &e), &e);
    fl_tensor_fini(&out);
    fl_tensor_fini(&dt);
    fl_tensor_fini(&ids);
}

/* Frees r's executor and program; its scope. */
static FlScope *finish(Run *r) {
    fl_exec_free(r->ex);
    fl_ir_program_free(r->p);
    return r->s;
}

/* Runs o (sparse or dense) for 3 steps with the same feeds from the same start; the scope. */
static FlScope *run(const Opt *o, bool sparse) {
    Run r = start(o, sparse);
    for (int k = 0; k < 3; k++) step(&r, k);
    return finish(&r);
}

static void test_lookup_table_grad_rows(void) {
    FlScope *sp = run(NULL, true), *dn = run(NULL, false);
    FlSelectedRows r;
    fl_rows_init(&r);
    CU_ASSERT_TRUE_FATAL(fl_var_get_rows(fl_scope_find(sp, "G"), &r));
    CU_ASSERT_EQUAL(r.height, V);
    CU_ASSERT_EQUAL_FATAL(r.rows.ne[0], N - 1); /* the padding id left out */
    const int64_t want[N - 1] = {4, 1, 4, 0, 4};
    for (int i = 0; i < N - 1; i++) CU_ASSERT_EQUAL(((int64_t *)fl_tensor_data(&r.rows))[i], want[i]);
    /* value row 4 is dout row 5 (the padding row 4 of dout skipped) */
    double last = cos(1.7 * (5 * D) + 2) - 0.2;
    CU_ASSERT_DOUBLE_EQUAL(((double *)fl_tensor_data(&r.value))[4 * D], last, 0);
    fl_rows_fini(&r);
    /* the dense form (what fl_scope_get_tensor gives) equals the dense gradient exactly */
    for (int i = 0; i < V * D; i++) CU_ASSERT_EQUAL(ct_get(sp, "G", i), ct_get(dn, "G", i));
    fl_scope_free(sp);
    fl_scope_free(dn);
}

static void test_optimizers(void) {
    for (size_t k = 0; k < sizeof opts / sizeof opts[0]; k++) {
        const Opt *o = &opts[k];
        FlScope *sp = run(o, true), *dn = run(o, false), *start = run(NULL, false);
        const char *names[4] = {"W", o->states[0], o->states[1], NULL};
        for (int n = 0; names[n]; n++) {
            for (int i = 0; i < V * D; i++) {
                int row = i / D;
                bool touched = row == 0 || row == 1 || row == 4;
                double got = ct_get(sp, names[n], i);
                double want = !o->touched_only || touched ? ct_get(dn, names[n], i)
                              : n == 0 ? ct_get(start, "W", i) : 0.05 + 0.01 * i;
                if (fabs(got - want) > 1e-12 * (1 + fabs(want)))
                    fprintf(stderr, "\n%s%s %s[%d]: sparse %.17g, want %.17g\n", o->type, o->lazy ? " lazy" : "",
                            names[n], i, got, want);
                CU_ASSERT_DOUBLE_EQUAL(got, want, 1e-12 * (1 + fabs(want)));
            }
        }
        /* and the updates did something where the dense rule moves untouched rows */
        if (o->touched_only) CU_ASSERT_NOT_EQUAL(ct_get(dn, "W", 3 * D), ct_get(start, "W", 3 * D));
        fl_scope_free(sp);
        fl_scope_free(dn);
        fl_scope_free(start);
    }
}

/* The buffer of var name's tensor (a snapshot: the var may switch buffers after). */
static const FlBuffer *buf_of(FlScope *s, const char *name) {
    FlTensor t = FL_TENSOR_INIT;
    CU_ASSERT_TRUE_FATAL(fl_var_get_tensor(fl_scope_find(s, name), &t));
    const FlBuffer *b = t.buf;
    fl_tensor_fini(&t);
    return b;
}

/* The sparse updates that leave untouched rows alone (sgd, lazy adam, adagrad, ftrl) write the
 * rows into the var's own buffer (param and states keep their buffers step after step) while
 * nobody but the var holds it; a reference taken meanwhile (a fetch, a predicting thread) keeps
 * its values bit for bit while training goes on in new buffers, and once it is released the
 * updates go in place again. The results equal the dense ones (test_optimizers). */
static void test_update_in_place(void) {
    for (size_t k = 0; k < sizeof opts / sizeof opts[0]; k++) {
        const Opt *o = &opts[k];
        if (strcmp(o->type, "momentum") == 0 || (strcmp(o->type, "adam") == 0 && !o->lazy)) continue; /* dense */
        const char *names[4] = {"W", o->states[0], o->states[1], NULL};
        Run r = start(o, true);
        step(&r, 0);
        for (int n = 0; names[n]; n++) {
            const FlBuffer *b = buf_of(r.s, names[n]);
            step(&r, 1 + n);
            CU_ASSERT_PTR_EQUAL(buf_of(r.s, names[n]), b); /* no new buffer */
        }
        for (int n = 0; names[n]; n++) {
            FlTensor held = FL_TENSOR_INIT;
            CU_ASSERT_TRUE_FATAL(fl_var_get_tensor(fl_scope_find(r.s, names[n]), &held));
            double snap[V * D];
            memcpy(snap, fl_tensor_data(&held), sizeof snap);
            step(&r, 5);
            step(&r, 6);
            CU_ASSERT_PTR_NOT_EQUAL(buf_of(r.s, names[n]), held.buf);
            CU_ASSERT_EQUAL(memcmp(fl_tensor_data(&held), snap, sizeof snap), 0);
            CU_ASSERT_NOT_EQUAL(ct_get(r.s, names[n], 4 * D), snap[4 * D]); /* row 4 trained on */
            fl_tensor_fini(&held);
            const FlBuffer *b = buf_of(r.s, names[n]);
            step(&r, 7);
            CU_ASSERT_PTR_EQUAL(buf_of(r.s, names[n]), b); /* in place again */
        }
        fl_scope_free(finish(&r));
    }
}

/* sum: SelectedRows + SelectedRows merged; SelectedRows + dense is dense */
static void test_sum(void) {
    FlProgram *p = build(NULL, true);
    FlBlock *b = fl_ir_block(p, 0);
    var(b, "S", FL_DT_FLOAT64, 2, (int64_t[]){V, D}, true)->kind = FL_VAR_SELECTED_ROWS;
    var(b, "M", FL_DT_FLOAT64, 2, (int64_t[]){V, D}, true);
    FlOpDesc *s1 = fl_ir_op_append(b, "sum");
    fl_ir_op_add_input(s1, "X", "G");
    fl_ir_op_add_input(s1, "X", "G");
    fl_ir_op_add_output(s1, "Out", "S");
    FlOpDesc *s2 = fl_ir_op_append(b, "sum");
    fl_ir_op_add_input(s2, "X", "W");
    fl_ir_op_add_input(s2, "X", "G");
    fl_ir_op_add_output(s2, "Out", "M");
    FlExec *ex;
    FlErr e = {{0}};
    CT_OK(fl_exec_new(p, NULL, 0, NULL, &ex, &e), &e);
    FlScope *s = fl_scope_new(NULL);
    double w[V * D], dout[N * D];
    for (int i = 0; i < V * D; i++) w[i] = i;
    for (int i = 0; i < N * D; i++) dout[i] = 0.5 * i + 1;
    set(s, "W", 2, (int64_t[]){V, D}, w);
    FlTensor ids = ct_tensor(FL_DT_INT64, 2, (int64_t[]){N, 1}, ids_v);
    FlTensor dt = ct_tensor(FL_DT_FLOAT64, 2, (int64_t[]){N, D}, dout);
    FlExecFeed f[3] = {{"ids", &ids}, {"out", &dt}, {"dout", &dt}};
    CT_OK(fl_exec_run(ex, s, f, 3, NULL, NULL, 0, 0, &e), &e);
    FlSelectedRows r;
    fl_rows_init(&r);
    CU_ASSERT_TRUE_FATAL(fl_var_get_rows(fl_scope_find(s, "S"), &r));
    CU_ASSERT_EQUAL_FATAL(r.rows.ne[0], 3); /* 0, 1, 4 */
    const int64_t *rows = fl_tensor_data(&r.rows);
    CU_ASSERT_TRUE(rows[0] == 0 && rows[1] == 1 && rows[2] == 4);
    const double *v = fl_tensor_data(&r.value);
    /* row 4: ids 0, 2 and 5 of dout, twice */
    for (int j = 0; j < D; j++) {
        double g4 = dout[0 * D + j] + dout[2 * D + j] + dout[5 * D + j];
        CU_ASSERT_DOUBLE_EQUAL(v[2 * D + j], 2 * g4, 1e-12);
        CU_ASSERT_DOUBLE_EQUAL(v[0 * D + j], 2 * dout[3 * D + j], 1e-12);
        CU_ASSERT_DOUBLE_EQUAL(ct_get(s, "M", 4 * D + j), w[4 * D + j] + g4, 1e-12);
        CU_ASSERT_DOUBLE_EQUAL(ct_get(s, "M", 2 * D + j), w[2 * D + j], 0); /* the padding row */
    }
    fl_rows_fini(&r);
    fl_tensor_fini(&ids);
    fl_tensor_fini(&dt);
    fl_scope_free(s);
    fl_exec_free(ex);
    fl_ir_program_free(p);
}

/* split_selected_rows cuts G (rows 4 1 4 0 4 of height 6) at height_sections [2, 4]: A holds
 * rows 1 0 (value rows 1 and 3 of G), B rows 2 2 2 (4 - 2; value rows 0 2 4), in G's order;
 * scale of a SelectedRows scales its value and keeps its rows; the wire form (fl_rows_pack)
 * gives B back, and a malformed one is an error, never a crash. */
static void test_split_scale_pack(void) {
    FlProgram *p = build(NULL, true);
    FlBlock *b = fl_ir_block(p, 0);
    var(b, "A", FL_DT_FLOAT64, 2, (int64_t[]){2, D}, true)->kind = FL_VAR_SELECTED_ROWS;
    var(b, "B", FL_DT_FLOAT64, 2, (int64_t[]){4, D}, true)->kind = FL_VAR_SELECTED_ROWS;
    var(b, "A2", FL_DT_FLOAT64, 2, (int64_t[]){2, D}, true)->kind = FL_VAR_SELECTED_ROWS;
    FlOpDesc *sp = fl_ir_op_append(b, "split_selected_rows");
    fl_ir_op_add_input(sp, "X", "G");
    fl_ir_op_add_output(sp, "Out", "A");
    fl_ir_op_add_output(sp, "Out", "B");
    fl_ir_op_set_ints(sp, "height_sections", (int64_t[]){2, 4}, 2);
    FlOpDesc *sc = fl_ir_op_append(b, "scale");
    fl_ir_op_add_input(sc, "X", "A");
    fl_ir_op_add_output(sc, "Out", "A2");
    fl_ir_op_set_float(sc, "scale", 0.5);
    FlExec *ex;
    FlErr e = {{0}};
    CT_OK(fl_exec_new(p, NULL, 0, NULL, &ex, &e), &e);
    FlScope *s = fl_scope_new(NULL);
    double w[V * D], dout[N * D];
    for (int i = 0; i < V * D; i++) w[i] = i;
    for (int i = 0; i < N * D; i++) dout[i] = 0.5 * i + 1;
    set(s, "W", 2, (int64_t[]){V, D}, w);
    FlTensor ids = ct_tensor(FL_DT_INT64, 2, (int64_t[]){N, 1}, ids_v);
    FlTensor dt = ct_tensor(FL_DT_FLOAT64, 2, (int64_t[]){N, D}, dout);
    FlExecFeed f[3] = {{"ids", &ids}, {"out", &dt}, {"dout", &dt}};
    CT_OK(fl_exec_run(ex, s, f, 3, NULL, NULL, 0, 0, &e), &e);
    FlSelectedRows g, a, a2, bb, back;
    fl_rows_init(&g), fl_rows_init(&a), fl_rows_init(&a2), fl_rows_init(&bb), fl_rows_init(&back);
    CU_ASSERT_TRUE_FATAL(fl_var_get_rows(fl_scope_find(s, "G"), &g) && fl_var_get_rows(fl_scope_find(s, "A"), &a) &&
                         fl_var_get_rows(fl_scope_find(s, "A2"), &a2) && fl_var_get_rows(fl_scope_find(s, "B"), &bb));
    CU_ASSERT_TRUE(a.height == 2 && bb.height == 4 && a2.height == 2);
    CU_ASSERT_EQUAL_FATAL(a.rows.ne[0], 2);
    CU_ASSERT_EQUAL_FATAL(bb.rows.ne[0], 3);
    const int64_t *ar = fl_tensor_data(&a.rows), *br = fl_tensor_data(&bb.rows);
    CU_ASSERT_TRUE(ar[0] == 1 && ar[1] == 0 && br[0] == 2 && br[1] == 2 && br[2] == 2);
    const double *gv = fl_tensor_data(&g.value), *av = fl_tensor_data(&a.value), *a2v = fl_tensor_data(&a2.value),
                 *bv = fl_tensor_data(&bb.value);
    for (int j = 0; j < D; j++) {
        CU_ASSERT_EQUAL(av[0 * D + j], gv[1 * D + j]);
        CU_ASSERT_EQUAL(av[1 * D + j], gv[3 * D + j]);
        CU_ASSERT_EQUAL(a2v[1 * D + j], 0.5 * gv[3 * D + j]);
        CU_ASSERT_EQUAL(bv[1 * D + j], gv[2 * D + j]);
        CU_ASSERT_EQUAL(bv[2 * D + j], gv[4 * D + j]);
    }
    FlTensor packed = FL_TENSOR_INIT;
    CT_OK(fl_rows_pack(&e, &bb, &packed), &e);
    CT_OK(fl_rows_unpack(&e, &packed, &back), &e);
    CU_ASSERT_TRUE(back.height == 4 && back.rows.ne[0] == 3 && back.value.ndim == 2 && back.value.ne[1] == D);
    CU_ASSERT_EQUAL(memcmp(fl_tensor_data(&back.rows), br, 3 * sizeof *br), 0);
    CU_ASSERT_EQUAL(memcmp(fl_tensor_data(&back.value), bv, 3 * D * sizeof *bv), 0);
    /* malformed: too short, a row outside the height, a bad magic number */
    FlTensor bad = FL_TENSOR_INIT;
    int64_t nw = packed.ne[0] - 1;
    CT_OK(fl_tensor_alloc(&e, &bad, FL_DT_INT64, 1, &nw), &e);
    memcpy(fl_tensor_data(&bad), fl_tensor_data(&packed), (size_t)nw * sizeof(int64_t));
    CU_ASSERT_EQUAL(fl_rows_unpack(&e, &bad, &back), FL_ERROR);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "too few"));
    int64_t *pw = fl_tensor_data(&packed); /* packed is ours alone: edit it in place */
    pw[1] = 2;                             /* height 2: rows 2 are outside it */
    CU_ASSERT_EQUAL(fl_rows_unpack(&e, &packed, &back), FL_ERROR);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "outside [0, 2)"));
    pw[0] = 7;
    CU_ASSERT_EQUAL(fl_rows_unpack(&e, &packed, &back), FL_ERROR);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "magic"));
    /* the sections must cover the height */
    CU_ASSERT_EQUAL(fl_rows_split(&e, &g, (int64_t[]){2, 3}, 2, &a), FL_ERROR);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "add up to 5 rows but the height is 6"));
    fl_tensor_fini(&bad);
    fl_tensor_fini(&packed);
    fl_rows_fini(&g), fl_rows_fini(&a), fl_rows_fini(&a2), fl_rows_fini(&bb), fl_rows_fini(&back);
    fl_tensor_fini(&ids);
    fl_tensor_fini(&dt);
    fl_scope_free(s);
    fl_exec_free(ex);
    fl_ir_program_free(p);
}

/* fl_rows_scatter into its own input (ParamOut = Param): in place while nobody else holds the
 * buffer (a server's table block is not copied each step), into a new buffer when somebody does
 * (a send in flight), whose holder keeps the old values. */
static void test_scatter_in_place(void) {
    FlErr e = {{0}};
    double w[V * D], sv[2 * D] = {-1, -2, -3, -4, -5, -6}, sv2[2 * D] = {9, 9, 9, 9, 9, 9};
    for (int i = 0; i < V * D; i++) w[i] = i;
    FlTensor t = ct_tensor(FL_DT_FLOAT64, 2, (int64_t[]){V, D}, w);
    FlTensor rows = ct_tensor(FL_DT_INT64, 1, (int64_t[]){2}, (double[]){4, 1});
    FlTensor sub = ct_tensor(FL_DT_FLOAT64, 2, (int64_t[]){2, D}, sv), sub2 = ct_tensor(FL_DT_FLOAT64, 2, (int64_t[]){2, D}, sv2);
    const FlBuffer *b0 = t.buf;
    CT_OK(fl_rows_scatter(&e, &t, &rows, &sub, &t), &e);
    CU_ASSERT_PTR_EQUAL(t.buf, b0);
    const double *d = fl_tensor_data(&t);
    CU_ASSERT_TRUE(d[4 * D] == -1 && d[1 * D + 2] == -6 && d[0] == 0 && d[5 * D + 2] == 5 * D + 2);
    FlTensor held = FL_TENSOR_INIT;
    fl_tensor_ref(&held, &t);
    CT_OK(fl_rows_scatter(&e, &t, &rows, &sub2, &t), &e);
    CU_ASSERT_PTR_NOT_EQUAL(t.buf, held.buf);
    CU_ASSERT_TRUE(((const double *)fl_tensor_data(&t))[4 * D] == 9 && ((const double *)fl_tensor_data(&held))[4 * D] == -1);
    CU_ASSERT_TRUE(((const double *)fl_tensor_data(&t))[0] == 0);
    fl_tensor_fini(&held);
    fl_tensor_fini(&t);
    fl_tensor_fini(&rows);
    fl_tensor_fini(&sub);
    fl_tensor_fini(&sub2);
}

/* fl_rows_merge on many rows (the radix sort's path, 3 digits for a height of 5,000,000): the
 * rows sorted and distinct, each merged row bit-equal to the sum of its listed rows added in
 * order, as fl_rows_to_dense adds them; an id listed in both inputs merged once. */
static void test_merge_many(void) {
    enum { NA = 700, NB = 300, W = 3 };
    const int64_t height = 5000000;
    FlErr e = {{0}};
    static double ia[NA], ib[NB], va[NA * W], vb[NB * W];
    uint64_t x = 12345;
    for (int i = 0; i < NA + NB; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        double id = (double)((x >> 33) % 400 * 12497 % height); /* 400 distinct ids, repeated */
        if (i < NA) ia[i] = id; else ib[i - NA] = id;
    }
    for (int i = 0; i < NA * W; i++) va[i] = sin(i * 0.37) / 3;
    for (int i = 0; i < NB * W; i++) vb[i] = cos(i * 0.11) / 7;
    FlSelectedRows a, b, m;
    fl_rows_init(&a), fl_rows_init(&b), fl_rows_init(&m);
    a.rows = ct_tensor(FL_DT_INT64, 1, (int64_t[]){NA}, ia);
    a.value = ct_tensor(FL_DT_FLOAT32, 2, (int64_t[]){NA, W}, va);
    b.rows = ct_tensor(FL_DT_INT64, 1, (int64_t[]){NB}, ib);
    b.value = ct_tensor(FL_DT_FLOAT32, 2, (int64_t[]){NB, W}, vb);
    a.height = b.height = height;
    CT_OK(fl_rows_merge(&e, (const FlSelectedRows *[]){&a, &b}, 2, &m), &e);
    const int64_t *r = fl_tensor_data(&m.rows);
    int64_t u = m.rows.ne[0];
    CU_ASSERT_TRUE(u > 32 && u <= 400);
    for (int64_t i = 1; i < u; i++) CU_ASSERT_TRUE_FATAL(r[i - 1] < r[i]);
    const float *mv = fl_tensor_data(&m.value);
    int64_t found = 0;
    for (int64_t i = 0; i < u; i++) {
        float want[W] = {0};
        for (int k = 0; k < NA + NB; k++) {
            double id = k < NA ? ia[k] : ib[k - NA];
            if ((int64_t)id != r[i]) continue;
            found++;
            for (int j = 0; j < W; j++) want[j] += k < NA ? (float)va[k * W + j] : (float)vb[(k - NA) * W + j];
        }
        CU_ASSERT_EQUAL(memcmp(want, mv + i * W, sizeof want), 0);
    }
    CU_ASSERT_EQUAL(found, NA + NB); /* every listed row went to one merged row */
    fl_rows_fini(&a), fl_rows_fini(&b), fl_rows_fini(&m);
}

/* fl_rows_decay (sparse_decay): each listed row (duplicates kept) gets coeff * W[row] (L1: coeff *
 * sign); no rows: nothing; a parameter of another shape: an error. */
static void test_rows_decay(void) {
    FlErr e = {{0}};
    FlSelectedRows r, o;
    fl_rows_init(&r), fl_rows_init(&o);
    r.rows = ct_tensor(FL_DT_INT64, 1, (int64_t[]){3}, (double[]){2, 0, 2});
    r.value = ct_tensor(FL_DT_FLOAT32, 2, (int64_t[]){3, 2}, (double[]){1, 2, 3, 4, 5, 6});
    r.height = 4;
    FlTensor w = ct_tensor(FL_DT_FLOAT32, 2, (int64_t[]){4, 2}, (double[]){-1, 0, 9, 9, 2, -4, 9, 9});
    CT_OK(fl_rows_decay(&e, &r, &w, 0.5, false, &o), &e);
    const float *v = fl_tensor_data(&o.value);
    static const float l2[6] = {2, 0, 2.5, 4, 6, 4};
    for (int i = 0; i < 6; i++) CU_ASSERT_DOUBLE_EQUAL(v[i], l2[i], 1e-6);
    CU_ASSERT_TRUE(o.height == 4 && o.rows.ne[0] == 3 && ((const int64_t *)fl_tensor_data(&o.rows))[2] == 2);
    CT_OK(fl_rows_decay(&e, &r, &w, 0.5, true, &o), &e);
    v = fl_tensor_data(&o.value);
    static const float l1[6] = {1.5, 1.5, 2.5, 4, 5.5, 5.5};
    for (int i = 0; i < 6; i++) CU_ASSERT_DOUBLE_EQUAL(v[i], l1[i], 1e-6);
    /* the dense sum of the decayed rows: row 2 decayed twice */
    FlTensor d = FL_TENSOR_INIT;
    CT_OK(fl_rows_to_dense(&e, &o, &d), &e);
    CU_ASSERT_DOUBLE_EQUAL(((const float *)fl_tensor_data(&d))[4], 1.5 + 5.5, 1e-6);
    fl_tensor_fini(&d);
    FlSelectedRows z, zo;
    fl_rows_init(&z), fl_rows_init(&zo);
    z.rows = ct_tensor(FL_DT_INT64, 1, (int64_t[]){0}, (double[]){0});
    z.value = ct_tensor(FL_DT_FLOAT32, 2, (int64_t[]){0, 2}, (double[]){0});
    z.height = 4;
    CT_OK(fl_rows_decay(&e, &z, &w, 0.5, false, &zo), &e);
    CU_ASSERT_EQUAL(zo.value.ne[0], 0);
    double w3v[12] = {0};
    FlTensor w3 = ct_tensor(FL_DT_FLOAT32, 2, (int64_t[]){4, 3}, w3v);
    CU_ASSERT_EQUAL(fl_rows_decay(&e, &r, &w3, 0.5, false, &zo), FL_ERROR);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "does not match"));
    fl_tensor_fini(&w), fl_tensor_fini(&w3);
    fl_rows_fini(&r), fl_rows_fini(&o), fl_rows_fini(&z), fl_rows_fini(&zo);
}

int main(void) {
    static const CtCase cases[] = {
        CT_TEST(test_lookup_table_grad_rows),
        CT_TEST(test_optimizers),
        CT_TEST(test_sum),
        CT_TEST(test_split_scale_pack),
        CT_TEST(test_scatter_in_place),
        CT_TEST(test_update_in_place),
        CT_TEST(test_rows_decay),
        CT_TEST(test_merge_many),
    };
    return ct_run("selrows", cases, (int)(sizeof cases / sizeof cases[0]));
}
