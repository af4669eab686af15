/* train_driver.c: the driver program of a run spec's training (train_driver.h), built from the
 * bundle's run spec and main program.
 *
 * How: block 0 holds the options, the report and the epoch counter; block 1 (an epoch) the
 * feeds, the figures and the step's rows, which its report_next writes before block 2 (a step)
 * reads them, and the same for block 3 (a batch of the evaluation, with a test reader); each
 * while op's X and Out are found as the compiler finds them (fl_ir_block_io).
 */
#include "runtime/train/train_driver.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef FL_VEC(const char *) Names;

/* A var of block 0: a copy of src's declaration (no offsets of its own), or an int64/bool [1]. */
static FlVarDesc *var_like(FlBlock *b0, const char *name, const FlVarDesc *src) {
    FlVarDesc *v = fl_ir_var_add(b0, name);
    fl_ir_var_copy(v, src);
    v->persistable = v->trainable = false;
    v->stop_gradient = true;
    v->fed = false;
    return v;
}

static FlVarDesc *var_one(FlBlock *b0, const char *name, FlDType dt) {
    FlVarDesc *v = fl_ir_var_add(b0, name);
    int64_t one = 1;
    v->kind = FL_VAR_DENSE;
    v->dtype = dt;
    v->stop_gradient = true;
    fl_ir_var_set_shape(v, 1, &one);
    return v;
}

static FlOpDesc *op_option(FlBlock *b, const char *name, int64_t value, const char *out) {
    FlOpDesc *op = fl_ir_op_append(b, "option");
    fl_ir_op_set_string(op, "name", name);
    fl_ir_op_set_int(op, "value", value);
    fl_ir_op_add_output(op, "Out", out);
    return op;
}

static void op_less_equal(FlBlock *b) {
    FlOpDesc *op = fl_ir_op_append(b, "less_equal");
    fl_ir_op_add_input(op, "X", "epoch");
    fl_ir_op_add_input(op, "Y", "epochs");
    fl_ir_op_add_output(op, "Out", "more");
}

/* report_next(report, epoch) -> feeds, rows, global_rows, step, ok (test: the evaluation's,
 * into the vars named with the prefix "test_") */
static void op_next(FlBlock *b, const Names *feeds, bool test) {
    FlOpDesc *op = fl_ir_op_append(b, "report_next");
    fl_ir_op_add_input(op, "Report", "report");
    fl_ir_op_add_input(op, "Epoch", "epoch");
    if (test) fl_ir_op_set_bool(op, "test", true);
    fl_ir_op_add_output_slot(op, "Out");
    for (size_t i = 0; i < feeds->len; i++) fl_ir_op_add_output(op, "Out", feeds->data[i]);
    fl_ir_op_add_output(op, "Rows", test ? "test_rows" : "rows");
    fl_ir_op_add_output(op, "GlobalRows", test ? "test_global_rows" : "global_rows");
    fl_ir_op_add_output(op, "Step", test ? "test_step" : "step");
    fl_ir_op_add_output(op, "Ok", test ? "test_ok" : "ok");
}

/* A while op in outer on cond running sub, with the vars sub reads and writes (of block 0). */
static void op_while(FlProgram *p, FlBlock *outer, FlBlock *sub, const char *cond) {
    FlOpDesc *op = fl_ir_op_append(outer, "while");
    fl_ir_op_set_block(op, "sub_block", sub->idx);
    FlBlockIo io;
    fl_ir_block_io_init(&io);
    fl_ir_block_io(p, outer, sub, &io);
    fl_ir_op_add_input_slot(op, "X");
    for (size_t i = 0; i < io.ins.len; i++)
        if (fl_ir_var_lookup(p, outer, io.ins.data[i])) fl_ir_op_add_input(op, "X", io.ins.data[i]);
    fl_ir_op_add_input(op, "Condition", cond);
    fl_ir_op_add_output_slot(op, "Out");
    for (size_t i = 0; i < io.outs.len; i++)
        if (fl_ir_var_lookup(p, outer, io.outs.data[i])) fl_ir_op_add_output(op, "Out", io.outs.data[i]);
    fl_ir_block_io_fini(&io);
}

/* Declares in eb the feeds of reader r (main's data vars, a sequence feed's offset vars after
 * it, outermost first; those declared already kept) and lists them in *feeds. */
static FlStatus reader_feeds(const FlBlock *m0, FlBlock *eb, const FlReaderSpec *r, Names *feeds, FlErr *e) {
    for (size_t i = 0; i < r->feeds.len; i++) {
        const char *name = r->feeds.data[i].feed;
        const FlVarDesc *vd = fl_ir_var_find(m0, name);
        if (!vd) return fl_err(e, "the reader's feed '%s' is not a var of the main program", name);
        if (!fl_ir_var_find(eb, name)) {
            var_like(eb, name, vd);
            for (int l = 0; l < vd->lod_level; l++) {
                const FlVarDesc *od = fl_ir_var_find(m0, vd->lod[l]);
                if (od) var_like(eb, vd->lod[l], od)->lod_level = 0;
                else var_one(eb, vd->lod[l], FL_DT_INT64);
            }
        }
        FL_VEC_PUSH(feeds, name);
        for (int l = 0; l < r->feeds.data[i].lod_level && l < vd->lod_level; l++) FL_VEC_PUSH(feeds, vd->lod[l]);
    }
    return FL_OK;
}

/* The figure vars of eb (named prefix_i) fetched from main's vars names[0..n). */
static FlStatus figure_vars(const FlBlock *m0, FlBlock *eb, const char *prefix, const char *const *names, size_t n,
                            Names *fetches, Names *figures, FlErr *e) {
    for (size_t i = 0; i < n; i++) {
        const FlVarDesc *vd = fl_ir_var_find(m0, names[i]);
        if (!vd) return fl_err(e, "the fetch '%s' is not a var of the main program's global block", names[i]);
        char fig[48];
        snprintf(fig, sizeof fig, "%s_%zu", prefix, i);
        FlVarDesc *v = var_like(eb, fig, vd);
        fl_ir_var_set_lod(v, 0, NULL);
        FL_VEC_PUSH(fetches, names[i]);
        FL_VEC_PUSH(figures, v->name);
    }
    return FL_OK;
}

/* run_program(main, feeds) -> figures: a step (Step, Rows, GlobalRows: a job's step marks), or
 * with predict a batch of the evaluation. */
static void op_run_main(FlBlock *b, const Names *feeds, const Names *fetches, const Names *figures, bool predict) {
    FlOpDesc *op = fl_ir_op_append(b, "run_program");
    fl_ir_op_set_string(op, "program", "main");
    fl_ir_op_add_input_slot(op, "Feed");
    for (size_t i = 0; i < feeds->len; i++) fl_ir_op_add_input(op, "Feed", feeds->data[i]);
    if (predict) {
        fl_ir_op_set_bool(op, "predict", true);
    } else {
        fl_ir_op_add_input(op, "Step", "step");
        fl_ir_op_add_input(op, "Rows", "rows");
        fl_ir_op_add_input(op, "GlobalRows", "global_rows");
    }
    fl_ir_op_set_strings(op, "feed_names", (const char *const *)feeds->data, feeds->len);
    fl_ir_op_set_strings(op, "fetch_names", (const char *const *)fetches->data, fetches->len);
    fl_ir_op_add_output_slot(op, "Fetch");
    for (size_t i = 0; i < figures->len; i++) fl_ir_op_add_output(op, "Fetch", figures->data[i]);
}

/* type(report, figures..., rows) */
static void op_figures(FlBlock *b, const char *type, const Names *figures, const char *rows) {
    FlOpDesc *op = fl_ir_op_append(b, type);
    fl_ir_op_add_input(op, "Report", "report");
    fl_ir_op_add_input_slot(op, "Figures");
    for (size_t i = 0; i < figures->len; i++) fl_ir_op_add_input(op, "Figures", figures->data[i]);
    fl_ir_op_add_input(op, "Rows", rows);
}

static void op_epoch(FlBlock *b, const char *type) {
    FlOpDesc *op = fl_ir_op_append(b, type);
    fl_ir_op_add_input(op, "Report", "report");
    fl_ir_op_add_input(op, "Epoch", "epoch");
}

static void vars_next(FlBlock *eb, bool test) {
    var_one(eb, test ? "test_rows" : "rows", FL_DT_INT64);
    var_one(eb, test ? "test_global_rows" : "global_rows", FL_DT_INT64);
    var_one(eb, test ? "test_step" : "step", FL_DT_INT64);
    var_one(eb, test ? "test_ok" : "ok", FL_DT_BOOL);
}

FlStatus fl_train_driver_build(const FlBundle *b, const char *const *watch, size_t nwatch, FlProgram **out,
                               FlErr *e) {
    *out = NULL;
    const FlRunSpec *rs = &b->run;
    if (!rs->present || !rs->reader) return fl_err(e, "the run spec has no reader: nothing to train on");
    const FlBlock *m0 = fl_ir_block(b->main, 0);
    FlProgram *p = fl_ir_program_new();
    FlBlock *b0 = fl_ir_block(p, 0);
    FlBlock *eb = fl_ir_block_new(p, 0);       /* an epoch */
    FlBlock *sb = fl_ir_block_new(p, eb->idx); /* a step */
    FlBlock *tb = rs->test_reader ? fl_ir_block_new(p, eb->idx) : NULL; /* a batch of the evaluation */
    Names feeds = {0}, fetches = {0}, figures = {0}, tfeeds = {0}, tfetches = {0}, tfigures = {0}, names = {0};
    /* the figures: the run spec's fetches, then the watched vars (a step's); the fetches alone
     * (the evaluation's) */
    for (size_t i = 0; i < rs->fetch_vars.len; i++) FL_VEC_PUSH(&names, rs->fetch_vars.data[i]);
    for (size_t i = 0; i < nwatch; i++) FL_VEC_PUSH(&names, watch[i]);
    FlStatus st = reader_feeds(m0, eb, rs->reader, &feeds, e);
    if (st == FL_OK) st = figure_vars(m0, eb, "figure", (const char *const *)names.data, names.len, &fetches, &figures, e);
    if (st == FL_OK && tb) st = reader_feeds(m0, eb, rs->test_reader, &tfeeds, e);
    if (st == FL_OK && tb)
        st = figure_vars(m0, eb, "test_figure", (const char *const *)names.data, rs->fetch_vars.len, &tfetches,
                         &tfigures, e);
    if (st == FL_OK) {
        var_one(b0, "epochs", FL_DT_INT64);
        var_one(b0, "batch_size", FL_DT_INT64);
        var_one(b0, "seed", FL_DT_INT64);
        var_one(b0, "epoch", FL_DT_INT64);
        var_one(b0, "more", FL_DT_BOOL);
        vars_next(eb, false);
        if (tb) vars_next(eb, true);
        FlVarDesc *rep = fl_ir_var_add(b0, "report");
        rep->kind = FL_VAR_RAW;
        rep->stop_gradient = true;

        op_option(b0, "epochs", rs->epochs, "epochs");
        op_option(b0, "batch_size", rs->batch_size, "batch_size");
        op_option(b0, "seed", rs->seed, "seed");
        FlOpDesc *op = fl_ir_op_append(b0, "report_open");
        fl_ir_op_add_input(op, "Epochs", "epochs");
        fl_ir_op_add_input(op, "BatchSize", "batch_size");
        fl_ir_op_add_input(op, "Seed", "seed");
        fl_ir_op_add_output(op, "Out", "report");
        op = fl_ir_op_append(b0, "fill_constant");
        int64_t one = 1;
        fl_ir_op_set_ints(op, "shape", &one, 1);
        fl_ir_op_set_float(op, "value", 1);
        fl_ir_op_set_int(op, "dtype", FL_DT_INT64);
        fl_ir_op_add_output(op, "Out", "epoch");
        op_less_equal(b0);

        op_run_main(sb, &feeds, &fetches, &figures, false);
        op_figures(sb, "report_step", &figures, "rows");
        op_next(sb, &feeds, false);
        if (tb) {
            op_run_main(tb, &tfeeds, &tfetches, &tfigures, true);
            op_figures(tb, "report_test", &tfigures, "test_rows");
            op_next(tb, &tfeeds, true);
        }

        op_next(eb, &feeds, false);
        op_while(p, eb, sb, "ok");
        op_epoch(eb, "report_train_end");
        if (tb) {
            op_next(eb, &tfeeds, true);
            op_while(p, eb, tb, "test_ok");
        }
        op_epoch(eb, "report_epoch");
        op = fl_ir_op_append(eb, "increment");
        fl_ir_op_add_input(op, "X", "epoch");
        fl_ir_op_set_float(op, "step", 1);
        fl_ir_op_add_output(op, "Out", "epoch");
        op_less_equal(eb);
        op_while(p, b0, eb, "more");
    }
    FL_VEC_FREE(&feeds);
    FL_VEC_FREE(&fetches);
    FL_VEC_FREE(&figures);
    FL_VEC_FREE(&tfeeds);
    FL_VEC_FREE(&tfetches);
    FL_VEC_FREE(&tfigures);
    FL_VEC_FREE(&names);
    if (st != FL_OK) {
        fl_ir_program_free(p);
        return FL_ERROR;
    }
    *out = p;
    return FL_OK;
}
