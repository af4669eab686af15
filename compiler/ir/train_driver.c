/* train_driver.c: fluid.train's driver program (train_driver.h), built from the bundle's run spec
 * and main program for a bundle of format 2 (the compiler's bundles hold the one their .fl loop,
 * stdlib/fluid/_train.fl, wrote with the same var declarations and ops), and the transform that
 * adds watched vars to it (FlTrainOptions.watch).
 *
 * How: block 0 holds the options, the report and the epoch counter; block 1 (an epoch) the
 * feeds and the step's rows, which its report_next writes before block 2 (a step) reads them;
 * block 2 its figures, which its run_program writes before report_step reads them (so every var
 * is written before it is read, as flc verify checks); block 3 the same for a batch of the
 * evaluation, with a test reader. Each while op's X and Out are found as the compiler finds them
 * (fl_ir_block_io).
 */
#include "compiler/ir/train_driver.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef FlTrainNames Names;

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

/* The figure vars of sb (named prefix_K, K from first on) fetched from main's vars names[0..n). */
static FlStatus figure_vars(const FlBlock *m0, FlBlock *sb, const char *prefix, size_t first, const char *const *names,
                            size_t n, Names *fetches, Names *figures, FlErr *e) {
    for (size_t i = 0; i < n; i++) {
        const FlVarDesc *vd = fl_ir_var_find(m0, names[i]);
        if (!vd) return fl_err(e, "the fetch '%s' is not a var of the main program's global block", names[i]);
        char fig[48];
        snprintf(fig, sizeof fig, "%s_%zu", prefix, first + i);
        if (fl_ir_var_find(sb, fig)) return fl_err(e, "the driver declares '%s' already", fig);
        FlVarDesc *v = var_like(sb, fig, vd);
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

FlVarDesc *fl_ir_train_var(FlBlock *b, const char *name, FlDType dt) { return var_one(b, name, dt); }

FlVarDesc *fl_ir_train_report_var(FlBlock *b, const char *name) {
    FlVarDesc *v = fl_ir_var_add(b, name);
    v->kind = FL_VAR_RAW;
    v->stop_gradient = true;
    return v;
}

FlStatus fl_ir_train_feeds(const FlBundle *b, FlBlock *blk, bool test, FlTrainNames *feeds, FlErr *e) {
    const FlReaderSpec *r = test ? b->run.test_reader : b->run.reader;
    if (!r) return fl_err(e, "the run spec has no %s reader", test ? "test" : "training");
    return reader_feeds(fl_ir_block(b->main, 0), blk, r, feeds, e);
}

FlStatus fl_ir_train_figures(const FlBundle *b, FlBlock *blk, const char *prefix, FlTrainNames *figures, FlErr *e) {
    Names fetches = {0};
    FlStatus st = figure_vars(fl_ir_block(b->main, 0), blk, prefix, 0, (const char *const *)b->run.fetch_vars.data,
                              b->run.fetch_vars.len, &fetches, figures, e);
    FL_VEC_FREE(&fetches);
    return st;
}

FlStatus fl_ir_train_driver_build(const FlBundle *b, FlLoc at, FlProgram **out, FlErr *e) {
    *out = NULL;
    const FlRunSpec *rs = &b->run;
    if (!rs->present || !rs->reader) return fl_err(e, "the run spec has no reader: nothing to train on");
    const FlBlock *m0 = fl_ir_block(b->main, 0);
    FlProgram *p = fl_ir_program_new();
    FlBlock *b0 = fl_ir_block(p, 0);
    FlBlock *eb = fl_ir_block_new(p, 0);       /* an epoch */
    FlBlock *sb = fl_ir_block_new(p, eb->idx); /* a step */
    FlBlock *tb = rs->test_reader ? fl_ir_block_new(p, eb->idx) : NULL; /* a batch of the evaluation */
    Names feeds = {0}, fetches = {0}, figures = {0}, tfeeds = {0}, tfetches = {0}, tfigures = {0};
    /* the figures of a step and of the evaluation: the run spec's fetches */
    const char *const *names = (const char *const *)rs->fetch_vars.data;
    FlStatus st = reader_feeds(m0, eb, rs->reader, &feeds, e);
    if (st == FL_OK) st = figure_vars(m0, sb, "figure", 0, names, rs->fetch_vars.len, &fetches, &figures, e);
    if (st == FL_OK && tb) st = reader_feeds(m0, eb, rs->test_reader, &tfeeds, e);
    if (st == FL_OK && tb)
        st = figure_vars(m0, tb, "test_figure", 0, names, rs->fetch_vars.len, &tfetches, &tfigures, e);
    if (st == FL_OK) {
        var_one(b0, "epochs", FL_DT_INT64);
        var_one(b0, "batch_size", FL_DT_INT64);
        var_one(b0, "seed", FL_DT_INT64);
        var_one(b0, "epoch", FL_DT_INT64);
        var_one(b0, "more", FL_DT_BOOL);
        vars_next(eb, false);
        if (tb) vars_next(eb, true);
        fl_ir_train_report_var(b0, "report");

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
    if (st != FL_OK) {
        fl_ir_program_free(p);
        return FL_ERROR;
    }
    for (size_t k = 0; k < p->blocks.len; k++) {
        FlBlock *bl = p->blocks.data[k];
        for (size_t i = 0; i < bl->vars.len; i++) bl->vars.data[i]->loc = at;
        for (size_t i = 0; i < bl->ops.len; i++) bl->ops.data[i]->loc = at;
    }
    *out = p;
    return FL_OK;
}

bool fl_ir_bundle_trains(const FlBundle *b) { return b->run.present && b->run.reader; }

FlStatus fl_ir_bundle_add_train_driver(FlBundle *b, FlLoc at, FlErr *e) {
    if (b->driver || !fl_ir_bundle_trains(b)) return FL_OK;
    return fl_ir_train_driver_build(b, at, &b->driver, e);
}

/* The step of fluid.train's driver: its run_program of main with a Step (the evaluation's has
 * predict instead), and the block holding it. */
static FlOpDesc *step_run(FlProgram *drv, FlBlock **sb) {
    for (size_t k = 1; k < drv->blocks.len; k++) {
        FlBlock *b = drv->blocks.data[k];
        for (size_t i = 0; i < b->ops.len; i++) {
            FlOpDesc *op = b->ops.data[i];
            if (!strcmp(op->type, "run_program") && fl_ir_op_input(op, "Step") &&
                !strcmp(fl_ir_op_get_string(op, "program", ""), "main")) {
                *sb = b;
                return op;
            }
        }
    }
    return NULL;
}

static FlOpDesc *op_in(FlBlock *b, const char *type) {
    for (size_t i = 0; i < b->ops.len; i++)
        if (!strcmp(b->ops.data[i]->type, type)) return b->ops.data[i];
    return NULL;
}

FlStatus fl_ir_train_driver_watch(FlProgram *drv, const FlBundle *b, const char *const *watch, size_t n, FlErr *e) {
    if (!n) return FL_OK;
    FlBlock *sb = NULL;
    FlOpDesc *run = step_run(drv, &sb);
    FlOpDesc *rep = sb ? op_in(sb, "report_step") : NULL;
    FlSlot *fetch = run ? fl_ir_op_output(run, "Fetch") : NULL;
    FlAttr *names = run ? fl_ir_op_attr(run, "fetch_names") : NULL;
    if (!fetch || !names || names->type != FL_ATTR_STRINGS || names->n != fetch->nargs || !rep ||
        !fl_ir_op_input(rep, "Figures"))
        return fl_err(e, "watching vars: the bundle's driver is not fluid.train's loop (no step fetching figures)");
    Names fetches = {0}, figures = {0};
    /* copies: setting the attribute below frees its strings */
    size_t nold = names->n;
    for (size_t i = 0; i < nold; i++) FL_VEC_PUSH(&fetches, fl_xstrdup(names->strs[i]));
    size_t first = fetch->nargs;
    FlStatus st = figure_vars(fl_ir_block(b->main, 0), sb, "figure", first, watch, n, &fetches, &figures, e);
    if (st == FL_OK) {
        fl_ir_op_set_strings(run, "fetch_names", (const char *const *)fetches.data, fetches.len);
        for (size_t i = 0; i < figures.len; i++) {
            fl_ir_var_find(sb, figures.data[i])->loc = run->loc;
            fl_ir_op_add_output(run, "Fetch", figures.data[i]);
            fl_ir_op_add_input(rep, "Figures", figures.data[i]);
        }
    }
    for (size_t i = 0; i < nold; i++) free((char *)fetches.data[i]);
    FL_VEC_FREE(&fetches);
    FL_VEC_FREE(&figures);
    return st;
}
