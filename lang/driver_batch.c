/* driver_batch.c: a reader's batch as Paddle's list of samples (docs/driver.md, "Data"), the way
 * Paddle's dist tests take a trainer's share of a batch:
 *
 *     for offset, item in enumerate(origin_batch):
 *         if offset % 2 == trainer_id:
 *             new_batch.append(item)
 *     feeder.feed(new_batch)
 *
 * Iterating a batch (for, enumerate, list) whose size paddle.batch(reader, batch_size=n) fixes
 * gives its n samples when the script compiles: sample i is a tuple of the fields' row i (slices
 * of the batch's field vars, ops of the driver). A short batch (the last one of an epoch, unless
 * drop_last=True) has no row i for the samples past its end: slicing one is a run-time error
 * naming the slice. A list of samples is a batch again for DataFeeder.feed: each field is the
 * samples' rows, concatenated in the list's order. And Variable.is_data, which such scripts
 * use to find their feed vars (trainer_prog.global_block().vars.values() if var.is_data).
 */
#include <string.h>

#include "lang/eval_impl.h"

static FlValue *attr(FlValue *r, const char *name) {
    return r && r->kind == VK_RECORD && r->rec.attrs ? fl_map_find_str(&r->rec.attrs->map, name) : NULL;
}

static bool is_batch(const FlValue *v) {
    return v && v->kind == VK_RECORD && !v->rec.cls && v->rec.type && !strcmp(v->rec.type, "ReaderBatch");
}

/* The rows paddle.batch gives the reader's batches (through firstn and buffered), 0: unknown. */
static int64_t batch_size(FlValue *reader) {
    for (int depth = 0; reader && depth < 64; depth++) {
        FlValue *k = attr(reader, "_kind"), *n = attr(reader, "_n"), *ins = attr(reader, "_inputs");
        if (!k || k->kind != VK_STR) return 0;
        if (!strcmp(k->str.s, "batch")) return n && n->kind == VK_INT ? n->i : 0;
        if (strcmp(k->str.s, "firstn") && strcmp(k->str.s, "buffered")) return 0;
        reader = ins && ins->list.len ? ins->list.items[0] : NULL;
    }
    return 0;
}

static FlValue *one_int(Ctx *c, int64_t i) {
    FlValue *l = fl_v_list(c, VK_LIST);
    fl_v_list_push(c, l, fl_v_int(c, i));
    return l;
}

bool fl_ev_var_is_data(Ctx *c, FlValue *var, const FlVarDesc *d) {
    if (!d->fed || fl_ev_is_driver_var(c, var)) return false;
    const FlBlock *b = fl_ir_block(var->var.prog, 0); /* a data var's offsets are fed, not data */
    for (size_t i = 0; i < b->vars.len; i++)
        for (int k = 0; k < b->vars.data[i]->lod_level; k++)
            if (!strcmp(b->vars.data[i]->lod[k], d->name)) return false;
    return true;
}

FlValue *fl_ev_batch_samples(Ctx *c, FlValue *batch, FlSpan sp) {
    if (!is_batch(batch)) return NULL;
    int64_t n = batch_size(attr(batch, "_reader"));
    if (n <= 0)
        return fl_ev_error(c, sp, "iterating a batch: its size is not known when the script compiles (a batch of "
                           "paddle.batch(reader, batch_size=n) gives n samples); feed it whole (feeder.feed(data))");
    if (n > 4096)
        return fl_ev_error(c, sp, "iterating a batch of %lld samples: each is compiled as ops of the driver; at most "
                           "4096", (long long)n);
    FlValue *fields = attr(batch, "_fields"), *lods = attr(batch, "_lods"), *out = fl_v_list(c, VK_LIST);
    for (size_t f = 0; lods && f < lods->list.len; f++)
        if (lods->list.items[f]->kind != VK_NONE)
            return fl_ev_error(c, sp, "iterating a batch whose field %zu is a sequence is not compiled: feed the "
                               "batch whole (feeder.feed(data))", f);
    for (int64_t i = 0; i < n; i++) {
        FlValue *sample = fl_v_list(c, VK_TUPLE);
        for (size_t f = 0; f < fields->list.len; f++) {
            const char *names[4] = {"Input", "axes", "starts", "ends"};
            FlValue *vals[4] = {fields->list.items[f], one_int(c, 0), one_int(c, i), one_int(c, i + 1)};
            FlValue *row = fl_ev_driver_kwop(c, "slice", names, vals, 4, sp);
            if (row->kind == VK_ERROR) return row;
            fl_v_list_push(c, sample, row);
        }
        fl_v_list_push(c, out, sample);
    }
    return out;
}

FlValue *fl_ev_samples_fields(Ctx *c, FlValue *samples, FlSpan sp) {
    size_t n = samples->list.len, nf = 0;
    if (!n)
        return fl_ev_error(c, sp, "DataFeeder.feed of an empty list: no samples to feed");
    for (size_t i = 0; i < n; i++) {
        FlValue *s = samples->list.items[i];
        bool ok = s->kind == VK_TUPLE && s->list.len > 0 && (i == 0 || s->list.len == nf);
        for (size_t f = 0; ok && f < s->list.len; f++) ok = fl_ev_is_driver_var(c, s->list.items[f]);
        if (!ok)
            return fl_ev_error(c, sp, "DataFeeder.feed of a list: its element %zu is not a sample of a batch (for item "
                               "in data: ..., each with the fields of the first)", i + 1);
        nf = s->list.len;
    }
    FlValue *fields = fl_v_list(c, VK_LIST);
    for (size_t f = 0; f < nf; f++) {
        FlValue *rows = fl_v_list(c, VK_LIST);
        for (size_t i = 0; i < n; i++) fl_v_list_push(c, rows, samples->list.items[i]->list.items[f]);
        if (n == 1) {
            fl_v_list_push(c, fields, rows->list.items[0]);
            continue;
        }
        const char *names[2] = {"X", "axis"};
        FlValue *vals[2] = {rows, fl_v_int(c, 0)};
        FlValue *r = fl_ev_driver_kwop(c, "concat", names, vals, 2, sp);
        if (r->kind == VK_ERROR) return r;
        fl_v_list_push(c, fields, r->kind == VK_TUPLE ? r->list.items[0] : r);
    }
    return fields;
}
