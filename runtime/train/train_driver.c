/* train_driver.c: the driver program of a run spec's training (train_driver.h), built from the
 * bundle's run spec and main program.
 *
 * How: block 0 holds the options, the report and the epoch counter; block 1 (an epoch) the
 * feeds, the figures and the step's rows, which its report_next writes before block 2 (a step)
 * reads them; each while op's X and Out are found as the compiler finds them (fl_ir_block_io).
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

/* report_next(report, epoch) -> feeds, rows, ok */
static void op_next(FlBlock *b, const Names *feeds) {
    FlOpDesc *op = fl_ir_op_append(b, "report_next");
    fl_ir_op_add_input(op, "Report", "report");
    fl_ir_op_add_input(op, "Epoch", "epoch");
    fl_ir_op_add_output_slot(op, "Out");
    for (size_t i = 0; i < feeds->len; i++) fl_ir_op_add_output(op, "Out", feeds->data[i]);
    fl_ir_op_add_output(op, "Rows", "rows");
    fl_ir_op_add_output(op, "Ok", "ok");
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
    Names feeds = {0}, fetches = {0}, figures = {0};
    FlStatus st = FL_OK;
    /* the feeds, named as main's vars they feed */
    for (size_t i = 0; i < rs->reader->feeds.len && st == FL_OK; i++) {
        const char *name = rs->reader->feeds.data[i].feed;
        const FlVarDesc *vd = fl_ir_var_find(m0, name);
        if (!vd) {
            st = fl_err(e, "the reader's feed '%s' is not a var of the main program", name);
            break;
        }
        var_like(eb, name, vd);
        for (int l = 0; l < vd->lod_level; l++) {
            const FlVarDesc *od = fl_ir_var_find(m0, vd->lod[l]);
            if (od) var_like(eb, vd->lod[l], od)->lod_level = 0;
            else var_one(eb, vd->lod[l], FL_DT_INT64);
        }
        FL_VEC_PUSH(&feeds, name);
        for (int l = 0; l < rs->reader->feeds.data[i].lod_level && l < vd->lod_level; l++) FL_VEC_PUSH(&feeds, vd->lod[l]);
    }
    /* the figures: the run spec's fetches, then the watched vars */
    for (size_t i = 0; i < rs->fetch_vars.len + nwatch && st == FL_OK; i++) {
        const char *name = i < rs->fetch_vars.len ? rs->fetch_vars.data[i] : watch[i - rs->fetch_vars.len];
        const FlVarDesc *vd = fl_ir_var_find(m0, name);
        if (!vd) {
            st = fl_err(e, "the fetch '%s' is not a var of the main program's global block", name);
            break;
        }
        char fig[32];
        snprintf(fig, sizeof fig, "figure_%zu", i);
        FlVarDesc *v = var_like(eb, fig, vd);
        fl_ir_var_set_lod(v, 0, NULL);
        FL_VEC_PUSH(&fetches, name);
        FL_VEC_PUSH(&figures, v->name);
    }
    if (st != FL_OK) {
        FL_VEC_FREE(&feeds);
        FL_VEC_FREE(&fetches);
        FL_VEC_FREE(&figures);
        fl_ir_program_free(p);
        return FL_ERROR;
    }
    var_one(b0, "epochs", FL_DT_INT64);
    var_one(b0, "batch_size", FL_DT_INT64);
    var_one(b0, "seed", FL_DT_INT64);
    var_one(b0, "epoch", FL_DT_INT64);
    var_one(b0, "more", FL_DT_BOOL);
    var_one(eb, "rows", FL_DT_INT64);
    var_one(eb, "ok", FL_DT_BOOL);
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

    op = fl_ir_op_append(sb, "run_program");
    fl_ir_op_set_string(op, "program", "main");
    fl_ir_op_add_input_slot(op, "Feed");
    for (size_t i = 0; i < feeds.len; i++) fl_ir_op_add_input(op, "Feed", feeds.data[i]);
    fl_ir_op_set_strings(op, "feed_names", (const char *const *)feeds.data, feeds.len);
    fl_ir_op_set_strings(op, "fetch_names", (const char *const *)fetches.data, fetches.len);
    fl_ir_op_add_output_slot(op, "Fetch");
    for (size_t i = 0; i < figures.len; i++) fl_ir_op_add_output(op, "Fetch", figures.data[i]);
    op = fl_ir_op_append(sb, "report_step");
    fl_ir_op_add_input(op, "Report", "report");
    fl_ir_op_add_input_slot(op, "Figures");
    for (size_t i = 0; i < figures.len; i++) fl_ir_op_add_input(op, "Figures", figures.data[i]);
    fl_ir_op_add_input(op, "Rows", "rows");
    op_next(sb, &feeds);

    op_next(eb, &feeds);
    op_while(p, eb, sb, "ok");
    op = fl_ir_op_append(eb, "report_epoch");
    fl_ir_op_add_input(op, "Report", "report");
    fl_ir_op_add_input(op, "Epoch", "epoch");
    op = fl_ir_op_append(eb, "increment");
    fl_ir_op_add_input(op, "X", "epoch");
    fl_ir_op_set_float(op, "step", 1);
    fl_ir_op_add_output(op, "Out", "epoch");
    op_less_equal(eb);
    op_while(p, b0, eb, "more");

    FL_VEC_FREE(&feeds);
    FL_VEC_FREE(&fetches);
    FL_VEC_FREE(&figures);
    *out = p;
    return FL_OK;
}
