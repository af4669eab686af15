/* driver_lod.c: Fluid's LoDTensor in a script (docs/driver.md, "Fetched values"): a tensor the
 * driver feeds, with the sequence lengths of its rows. The native module `_lod` (used by
 * stdlib/fluid/lod_tensor.fl and stdlib/numpy.fl):
 *
 *   LoDTensor()                      an empty LoDTensor record
 *   create(data, recursive_seq_lens) fluid.create_lod_tensor's work: data a LoDTensor, a numpy
 *                                    array (numbers, or a driver value) or a list of sequences
 *   is_lod_tensor(v), data(t)        numpy.array(t): t's data
 *
 * A LoDTensor record holds its data (`_data`: what set(array, place) was given: numbers kept for a
 * feed, numpy.array(...) of them, or a driver value) and its recursive sequence lengths (`_lens`,
 * a list of lists of ints known when the script compiles; [] when it has none). Its methods are
 * Fluid's: set, set_lod, set_recursive_sequence_lengths, lod, recursive_sequence_lengths,
 * has_valid_recursive_sequence_lengths, shape. The lengths are checked as Fluid's CheckLoD does
 * (each level's count of sequences is the sum of the level above; the last level's sum is the
 * data's rows, where the rows are known when the script compiles; the ops check the rest when
 * they run).
 *
 * exe.run(feed={name: t}) of a LoDTensor (fl_ev_lod_feeds) feeds its data to the var, and to a var
 * of lod_level L its first L levels as offsets (the var's NAME@LOD0.., constants of the driver),
 * as DataFeeder feeds a reader's sequences; a var without LoD takes the data alone, as in Fluid. A
 * sequence var fed anything else without its offsets beside it is a located error.
 * A fetched value's lod() and recursive_sequence_lengths() (fl_ev_lod_fetched_attr) are [] when
 * the program's var has no LoD (the value Fluid gives, known when the script compiles); of a
 * fetched sequence, the run that fetched it fetches its offsets too (each level's var), and the
 * lengths are their differences, computed when the driver gets there: a LoDLengths record that
 * print() and str() show as Python shows the list of lists ([[3, 4, 2]]); indexing it is not
 * compiled (a located error: it is no list when the script compiles).
 */
#include <stdlib.h>
#include <string.h>

#include "lang/eval_impl.h"

#define LOD_TYPE "LoDTensor"
#define NDARRAY_TYPE "ndarray"
#define LENS_TYPE "LoDLengths"

bool fl_ev_is_lod_tensor(const FlValue *v) { return fl_v_is_rec(v, LOD_TYPE); }

/* Whether v is fluid.CPUPlace() or CUDAPlace(n) (stdlib/fluid/executor.fl's classes). */
static bool want_place(Ctx *c, FlValue *v, const char *what, FlSpan sp) {
    const char *n = v && v->kind == VK_RECORD && v->rec.cls ? v->rec.cls->cls.name : NULL;
    if (n && (strcmp(n, "CPUPlace") == 0 || strcmp(n, "CUDAPlace") == 0)) return true;
    fl_ev_error(c, sp, "%s takes fluid.CPUPlace() or fluid.CUDAPlace(n) as its place, found %s", what,
                fl_v_type_name(v));
    return false;
}

/* The rows of data (its first dim) when the script compiles, else -1 (a driver value whose batch
 * is known only at run time, or no data). */
static int64_t data_rows(Ctx *c, FlValue *d) {
    if (fl_v_is_rec(d, NDARRAY_TYPE)) d = fl_v_rec_get(d, "_value");
    if (d && fl_v_is_seq(d)) return (int64_t)d->list.len;
    if (!fl_ev_is_driver_var(c, d)) return -1;
    DriverSwap s;
    fl_ev_driver_enter(c, &s);
    FlVarDesc *vd = fl_ev_var_desc(c, d);
    fl_ev_driver_leave(c, &s);
    return vd && vd->ndim > 0 ? vd->shape[0] : -1;
}

/* lens (a list of lists of ints >= 0) copied, checked as Fluid's CheckLoD checks a LoD: each
 * level holds as many sequences as the level above sums to, and the last sums to rows (when rows
 * >= 0). NULL (reported) otherwise. */
static FlValue *check_lens(Ctx *c, FlValue *lens, int64_t rows, const char *what, FlSpan sp) {
    if (!fl_v_is_seq(lens))
        return fl_ev_error(c, sp, "%s takes a list of lists of sequence lengths ([[3, 4, 2]]), found %s", what,
                           fl_v_type_name(lens)), NULL;
    if (lens->list.len > FL_IR_MAX_LOD)
        return fl_ev_error(c, sp, "%s: %zu levels of sequences (at most %d)", what, lens->list.len, FL_IR_MAX_LOD),
               NULL;
    FlValue *out = fl_v_list(c, VK_LIST);
    int64_t above = -1;
    for (size_t k = 0; k < lens->list.len; k++) {
        FlValue *lv = lens->list.items[k];
        if (!fl_v_is_seq(lv))
            return fl_ev_error(c, sp, "%s: level %zu must be a list of sequence lengths, found %s", what, k,
                               fl_v_type_name(lv)), NULL;
        if (above >= 0 && (int64_t)lv->list.len != above)
            return fl_ev_error(c, sp, "%s: level %zu holds %zu sequences but the lengths of level %zu sum to %lld",
                               what, k, lv->list.len, k - 1, (long long)above), NULL;
        FlValue *l = fl_v_list(c, VK_LIST);
        int64_t sum = 0;
        for (size_t i = 0; i < lv->list.len; i++) {
            int64_t n;
            if (!fl_ev_want_int(c, lv->list.items[i], "a sequence length", sp, &n)) return NULL;
            if (n < 0)
                return fl_ev_error(c, sp, "%s: a negative sequence length (%lld) at level %zu", what, (long long)n, k),
                       NULL;
            sum += n;
            fl_v_list_push(c, l, fl_v_int(c, n));
        }
        fl_v_list_push(c, out, l);
        above = sum;
    }
    if (rows >= 0 && above >= 0 && above != rows)
        return fl_ev_error(c, sp, "%s: the lengths of the last level sum to %lld but the data has %lld rows", what,
                           (long long)above, (long long)rows), NULL;
    return out;
}

/* The offsets of lens (Fluid's lod()): each level's lengths summed from 0. */
static FlValue *offsets(Ctx *c, FlValue *lens) {
    FlValue *out = fl_v_list(c, VK_LIST);
    for (size_t k = 0; k < lens->list.len; k++) {
        FlValue *lv = lens->list.items[k], *o = fl_v_list(c, VK_LIST);
        int64_t at = 0;
        fl_v_list_push(c, o, fl_v_int(c, 0));
        for (size_t i = 0; i < lv->list.len; i++) fl_v_list_push(c, o, fl_v_int(c, at += lv->list.items[i]->i));
        fl_v_list_push(c, out, o);
    }
    return out;
}

static FlValue *copy_lens(Ctx *c, FlValue *lens) {
    FlValue *out = fl_v_list(c, VK_LIST);
    for (size_t k = 0; k < lens->list.len; k++) {
        FlValue *l = fl_v_list(c, VK_LIST);
        for (size_t i = 0; i < lens->list.items[k]->list.len; i++) fl_v_list_push(c, l, lens->list.items[k]->list.items[i]);
        fl_v_list_push(c, out, l);
    }
    return out;
}

/* ------------------------------------------------------------------ LoDTensor's methods */

static FlValue *t_set(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("set", "array place", 2);
    if (!want_place(c, v[1], "LoDTensor.set(array, place)", a->span)) return c->error;
    FlValue *d = v[0];
    if (fl_ev_is_lod_tensor(d)) d = fl_v_rec_get(d, "_data");
    if (!fl_v_is_rec(d, NDARRAY_TYPE) && !fl_ev_is_driver_var(c, d) && !fl_v_is_seq(d))
        return fl_ev_error(c, a->span, "LoDTensor.set(array, place) takes a numpy array (numpy.array(...), a fetched "
                                       "value), found %s", fl_v_type_name(d));
    int64_t rows = data_rows(c, d);
    FlValue *lens = fl_v_rec_get(self, "_lens");
    if (lens->list.len && !check_lens(c, lens, rows, "LoDTensor.set", a->span)) return c->error;
    fl_v_rec_set(c, self, "_data", d);
    return c->none;
}

static FlValue *t_set_lens(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("set_recursive_sequence_lengths", "recursive_sequence_lengths", 1);
    FlValue *d = fl_v_rec_get(self, "_data");
    FlValue *lens = check_lens(c, v[0], d->kind == VK_NONE ? -1 : data_rows(c, d),
                               "LoDTensor.set_recursive_sequence_lengths", a->span);
    if (!lens) return c->error;
    fl_v_rec_set(c, self, "_lens", lens);
    return c->none;
}

/* set_lod(lod): offsets (each level from 0, never falling) as lengths. */
static FlValue *t_set_lod(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("set_lod", "lod", 1);
    FlSpan sp = a->span;
    if (!fl_v_is_seq(v[0]))
        return fl_ev_error(c, sp, "LoDTensor.set_lod takes a list of lists of offsets ([[0, 3, 7]]), found %s",
                           fl_v_type_name(v[0]));
    FlValue *lens = fl_v_list(c, VK_LIST);
    for (size_t k = 0; k < v[0]->list.len; k++) {
        FlValue *ov = v[0]->list.items[k];
        if (!fl_v_is_seq(ov) || ov->list.len == 0)
            return fl_ev_error(c, sp, "LoDTensor.set_lod: level %zu must be a non-empty list of offsets, found %s", k,
                               fl_v_type_name(ov));
        FlValue *l = fl_v_list(c, VK_LIST);
        int64_t prev = 0;
        for (size_t i = 0; i < ov->list.len; i++) {
            int64_t o;
            if (!fl_ev_want_int(c, ov->list.items[i], "an offset", sp, &o)) return c->error;
            if (i == 0 && o != 0)
                return fl_ev_error(c, sp, "LoDTensor.set_lod: level %zu starts at %lld; offsets start at 0", k,
                                   (long long)o);
            if (o < prev)
                return fl_ev_error(c, sp, "LoDTensor.set_lod: level %zu falls from %lld to %lld; offsets never fall",
                                   k, (long long)prev, (long long)o);
            if (i) fl_v_list_push(c, l, fl_v_int(c, o - prev));
            prev = o;
        }
        fl_v_list_push(c, lens, l);
    }
    FlValue *d = fl_v_rec_get(self, "_data");
    if (!(lens = check_lens(c, lens, d->kind == VK_NONE ? -1 : data_rows(c, d), "LoDTensor.set_lod", sp)))
        return c->error;
    fl_v_rec_set(c, self, "_lens", lens);
    return c->none;
}

static FlValue *t_lod(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("lod", "", 0);
    (void)v;
    return offsets(c, fl_v_rec_get(self, "_lens"));
}

static FlValue *t_lens(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("recursive_sequence_lengths", "", 0);
    (void)v;
    return copy_lens(c, fl_v_rec_get(self, "_lens"));
}

/* Fluid's check of the lengths against the data: known when the script compiles here, or an
 * error when the data's rows are known only at run time. */
static FlValue *t_valid(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("has_valid_recursive_sequence_lengths", "", 0);
    (void)v;
    FlValue *d = fl_v_rec_get(self, "_data"), *lens = fl_v_rec_get(self, "_lens");
    int64_t rows = d->kind == VK_NONE ? 0 : data_rows(c, d);
    if (rows < 0)
        return fl_ev_error(c, a->span, "LoDTensor.has_valid_recursive_sequence_lengths(): the data's rows are known "
                                       "only at run time here (the ops that read it check its offsets then)");
    int64_t sum = -1;
    for (size_t k = 0; k < lens->list.len; k++) {
        FlValue *lv = lens->list.items[k];
        if (sum >= 0 && (int64_t)lv->list.len != sum) return fl_v_bool(c, false);
        sum = 0;
        for (size_t i = 0; i < lv->list.len; i++) sum += lv->list.items[i]->i;
    }
    return fl_v_bool(c, sum < 0 || sum == rows);
}

static FlValue *t_shape(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("shape", "", 0);
    (void)v;
    FlValue *d = fl_v_rec_get(self, "_data");
    if (d->kind == VK_NONE) return fl_v_list(c, VK_LIST);
    if (fl_ev_is_driver_var(c, d)) return fl_ev_driver_attr(c, d, "shape", a->span);
    if (fl_v_is_rec(d, NDARRAY_TYPE)) d = fl_v_rec_get(d, "_value");
    int64_t shape[FL_IR_MAX_DIMS];
    int ndim = -1;
    if (!fl_ev_driver_flatten(c, d, 0, shape, &ndim, fl_v_list(c, VK_LIST), a->span)) return c->error;
    FlValue *l = fl_v_list(c, VK_LIST);
    for (int i = 0; i < ndim; i++) fl_v_list_push(c, l, fl_v_int(c, shape[i]));
    return l;
}

static FlValue *lod_tensor_new(Ctx *c) {
    static const NativeFn methods[] = {
        {"set", t_set},
        {"set_lod", t_set_lod},
        {"set_recursive_sequence_lengths", t_set_lens},
        {"lod", t_lod},
        {"recursive_sequence_lengths", t_lens},
        {"has_valid_recursive_sequence_lengths", t_valid},
        {"shape", t_shape},
    };
    FlValue *r = fl_v_record(c, LOD_TYPE);
    fl_v_rec_set(c, r, "_data", c->none);
    fl_v_rec_set(c, r, "_lens", fl_v_list(c, VK_LIST));
    for (size_t i = 0; i < FL_ARRAY_LEN(methods); i++)
        fl_v_rec_set(c, r, methods[i].name, fl_v_builtin(c, methods[i].name, methods[i].fn, r));
    return r;
}

/* ------------------------------------------------------------------ the module _lod */

static FlValue *n_lod_tensor(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("LoDTensor", "", 0);
    (void)v;
    (void)self;
    return lod_tensor_new(c);
}

/* create(data, recursive_seq_lens): fluid.create_lod_tensor without its place (checked by the
 * caller). A list of sequences of numbers is flattened into a [words, 1] array, its lengths
 * checked against recursive_seq_lens (one level), as Fluid's converter does. */
static FlValue *n_create(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("create", "data recursive_seq_lens", 2);
    (void)self;
    FlSpan sp = a->span;
    FlValue *d = v[0];
    bool from_tensor = fl_ev_is_lod_tensor(d); /* Fluid's create_lod_tensor(numpy.array(t), ...) */
    if (from_tensor) d = fl_v_rec_get(d, "_data");
    if (d->kind == VK_LIST && !from_tensor) {
        FlValue *flat = fl_v_list(c, VK_LIST), *lens = fl_v_list(c, VK_LIST), *want = v[1];
        for (size_t i = 0; i < d->list.len; i++) {
            FlValue *seq = d->list.items[i];
            if (!fl_v_is_seq(seq))
                return fl_ev_error(c, sp, "create_lod_tensor: a list of data is a list of sequences, found %s at %zu",
                                   fl_v_type_name(seq), i);
            fl_v_list_push(c, lens, fl_v_int(c, (int64_t)seq->list.len));
            for (size_t j = 0; j < seq->list.len; j++) {
                if (!fl_v_is_num(seq->list.items[j]))
                    return fl_ev_error(c, sp, "create_lod_tensor: the sequences of a list hold numbers (word ids), "
                                              "found %s", fl_v_type_name(seq->list.items[j]));
                FlValue *row = fl_v_list(c, VK_LIST);
                fl_v_list_push(c, row, seq->list.items[j]);
                fl_v_list_push(c, flat, row);
            }
        }
        bool same = fl_v_is_seq(want) && want->list.len == 1 && fl_v_is_seq(want->list.items[0]) &&
                    want->list.items[0]->list.len == lens->list.len;
        for (size_t i = 0; same && i < lens->list.len; i++)
            same = fl_v_is_num(want->list.items[0]->list.items[i]) &&
                   fl_v_num(want->list.items[0]->list.items[i]) == (double)lens->list.items[i]->i;
        if (!same)
            return fl_ev_error(c, sp, "create_lod_tensor: data and recursive_seq_lens do not match (a list of "
                                      "sequences takes one level: their lengths)");
        d = flat;
    }
    FlValue *t = lod_tensor_new(c);
    FlValue *lens = check_lens(c, v[1], data_rows(c, d), "create_lod_tensor", sp);
    if (!lens) return c->error;
    if (!fl_v_is_rec(d, NDARRAY_TYPE) && !fl_ev_is_driver_var(c, d) && !fl_v_is_seq(d))
        return fl_ev_error(c, sp, "create_lod_tensor takes a numpy array, a list of sequences or a LoDTensor, "
                                  "found %s", fl_v_type_name(v[0]));
    fl_v_rec_set(c, t, "_data", d);
    fl_v_rec_set(c, t, "_lens", lens);
    return t;
}

static FlValue *n_is_lod_tensor(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("is_lod_tensor", "v", 1);
    (void)self;
    return fl_v_bool(c, fl_ev_is_lod_tensor(v[0]));
}

static FlValue *n_data(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("data", "tensor", 1);
    (void)self;
    FlValue *d = fl_ev_is_lod_tensor(v[0]) ? fl_v_rec_get(v[0], "_data") : NULL;
    if (!d || d->kind == VK_NONE)
        return fl_ev_error(c, a->span, "numpy.array() of a LoDTensor that holds no data yet (set(array, place) it)");
    return d;
}

static const NativeFn lod_fns[] = {
    {"LoDTensor", n_lod_tensor},
    {"create", n_create},
    {"is_lod_tensor", n_is_lod_tensor},
    {"data", n_data},
};

void fl_ev_driver_lod_install(Ctx *c) { fl_ev_module_of_fns(c, "_lod", lod_fns, FL_ARRAY_LEN(lod_fns)); }

/* ------------------------------------------------------------------ exe.run */

/* The var a feed key names (a Var or a name) in g, else NULL. */
static const FlVarDesc *feed_var(FlValue *k, const FlBlock *g, const char **name) {
    *name = k->kind == VK_VAR ? k->var.name : k->kind == VK_STR ? k->str.s : NULL;
    return *name ? fl_ir_var_find(g, *name) : NULL;
}

/* Whether feed has a key naming name. */
static bool has_key(FlValue *feed, const char *name) {
    for (size_t i = 0; i < feed->dict.len; i++) {
        FlValue *k = feed->dict.keys[i];
        const char *n = k->kind == VK_VAR ? k->var.name : k->kind == VK_STR ? k->str.s : NULL;
        if (n && strcmp(n, name) == 0) return true;
    }
    return false;
}

FlValue *fl_ev_lod_feeds(Ctx *c, FlValue *feed, const FlBlock *g, FlSpan sp) {
    bool any = false;
    for (size_t i = 0; feed && feed->kind == VK_DICT && i < feed->dict.len; i++) {
        FlValue *t = feed->dict.vals[i];
        const char *name;
        const FlVarDesc *to = feed_var(feed->dict.keys[i], g, &name);
        any = any || fl_ev_is_lod_tensor(t);
        /* a sequence var fed without its offsets (numpy.array(t), numbers): Fluid's sequence ops
         * would find no LoD when they run */
        if (!fl_ev_is_lod_tensor(t) && to && to->lod_level > 0 && to->lod[0] && !has_key(feed, to->lod[0]))
            return fl_ev_error(c, sp, "feed '%s' is a sequence var (lod_level %d) but its value has no sequence "
                                      "lengths: feed a LoDTensor (fluid.create_lod_tensor(data, recursive_seq_lens, "
                                      "place)) or DataFeeder.feed(data)", name, to->lod_level);
    }
    if (!any) return feed;
    FlValue *out = fl_v_dict(c);
    for (size_t i = 0; i < feed->dict.len; i++) {
        FlValue *k = feed->dict.keys[i], *t = feed->dict.vals[i];
        if (!fl_ev_is_lod_tensor(t)) {
            fl_v_dict_set(c, out, k, t);
            continue;
        }
        const char *name;
        const FlVarDesc *to = feed_var(k, g, &name);
        if (!to) { /* exe.run reports the key */
            fl_v_dict_set(c, out, k, t);
            continue;
        }
        FlValue *d = fl_v_rec_get(t, "_data"), *lens = fl_v_rec_get(t, "_lens");
        if (d->kind == VK_NONE)
            return fl_ev_error(c, sp, "feed '%s': the LoDTensor holds no data (set(array, place) it)", name);
        fl_v_dict_set(c, out, k, d);
        if (to->lod_level == 0) continue; /* a var without LoD takes the data, as Fluid's does */
        if ((int)lens->list.len != to->lod_level)
            return fl_ev_error(c, sp, "feed '%s' has %d level%s of sequences (lod_level) but the LoDTensor has %zu "
                                      "(set_recursive_sequence_lengths)", name, to->lod_level,
                               to->lod_level == 1 ? "" : "s", lens->list.len);
        FlValue *offs = offsets(c, lens);
        for (int l = 0; l < to->lod_level; l++) {
            if (!to->lod[l]) return fl_ev_error(c, sp, "feed '%s': level %d of its offsets has no var", name, l);
            fl_v_dict_set(c, out, fl_v_cstr(c, to->lod[l]), offs->list.items[l]);
        }
    }
    return out;
}

/* The run_program op of the driver whose Fetch gives the driver var `name` (its index there in
 * *j), else NULL. */
static FlOpDesc *fetch_op(Ctx *c, const char *name, size_t *j, FlBlock **in) {
    FlProgram *d = c->bundle->driver;
    for (size_t b = 0; d && b < d->blocks.len; b++) {
        FlBlock *blk = d->blocks.data[b];
        for (size_t i = 0; i < blk->ops.len; i++) {
            FlOpDesc *op = blk->ops.data[i];
            if (strcmp(op->type, "run_program") != 0) continue;
            FlSlot *f = fl_ir_op_output(op, "Fetch");
            FlAttr *fn = fl_ir_op_attr(op, "fetch_names");
            for (*j = 0; f && fn && *j < f->nargs && *j < fn->n; (*j)++)
                if (strcmp(f->args[*j], name) == 0) {
                    if (in) *in = blk;
                    return op;
                }
        }
    }
    return NULL;
}

/* The control op of block b's parent whose sub_block is b (NULL: none, or not made yet), and its
 * place in the parent at *pos. */
static FlOpDesc *control_of(const FlProgram *d, const FlBlock *b, size_t *pos) {
    const FlBlock *p = b->parent >= 0 ? fl_ir_block(d, b->parent) : NULL;
    for (size_t i = 0; p && i < p->ops.len; i++) {
        FlAttr *at = fl_ir_op_attr(p->ops.data[i], "sub_block");
        if (at && at->type == FL_ATTR_BLOCK && at->i == b->idx) {
            *pos = i;
            return p->ops.data[i];
        }
    }
    return NULL;
}

/* The fetch var nv, declared in block home, that a run in block `in` writes (home or a block
 * within it: a run a reader feeds is in a conditional block of its own): each control op made
 * between them names it among its outputs, so the write reaches home; and, as the run's other
 * fetches there, it is written empty before the outermost of them (what it holds when no batch
 * came). false: reported. */
static bool fetch_reaches(Ctx *c, FlBlock *in, FlBlock *home, FlVarDesc *nv, FlSpan sp) {
    if (in == home) return true;
    FlProgram *d = c->bundle->driver;
    size_t pos = home->ops.len, at;
    for (FlBlock *b = in; b != home; b = fl_ir_block(d, b->parent)) {
        FlOpDesc *ctl = control_of(d, b, &at);
        if (!ctl) break; /* a loop still being built: its op takes its outputs when made, after home's ops */
        fl_ir_op_add_output(ctl, "Out", nv->name);
        if (b->parent == home->idx) pos = at;
    }
    size_t before = home->ops.len;
    DriverSwap s;
    fl_ev_driver_enter(c, &s);
    bool ok = fl_ev_zero_init(c, home, nv, sp);
    fl_ev_driver_leave(c, &s);
    if (!ok) return false;
    FL_ASSERT(home->ops.len == before + 1);
    FlOpDesc *init = home->ops.data[before];
    memmove(&home->ops.data[pos + 1], &home->ops.data[pos], (before - pos) * sizeof *home->ops.data);
    home->ops.data[pos] = init;
    return true;
}

/* The program var a fetched value was fetched from: the run_program of the driver whose Fetch
 * gives it, and the name at that place of its fetch_names. */
static const FlVarDesc *fetched_from(Ctx *c, const char *name) {
    size_t j;
    FlOpDesc *op = fetch_op(c, name, &j, NULL);
    if (!op) return NULL;
    const FlProgram *p = fl_ir_bundle_program(c->bundle, fl_ir_op_get_string(op, "program", "main"));
    return p ? fl_ir_var_find(fl_ir_block(p, 0), fl_ir_op_attr(op, "fetch_names")->strs[j]) : NULL;
}

/* The driver var in which the run that fetched `fetched` gives the program var `pvar` too: a
 * fetch of it the run has, else one appended to the run, declared in the block of `fetched`
 * (so that a fetched sequence's offsets come with it, from the same run). */
static FlValue *fetch_also(Ctx *c, const char *fetched, const char *pvar, FlSpan sp) {
    size_t j;
    FlBlock *in = NULL;
    FlOpDesc *op = fetch_op(c, fetched, &j, &in);
    FlAttr *fn = op ? fl_ir_op_attr(op, "fetch_names") : NULL;
    FlSlot *f = op ? fl_ir_op_output(op, "Fetch") : NULL;
    if (!op || !fn || !f) return fl_ev_error(c, sp, "'%s' is not a value a run fetched", fetched);
    for (size_t k = 0; k < fn->n && k < f->nargs; k++)
        if (strcmp(fn->strs[k], pvar) == 0) return fl_v_var(c, f->args[k]);
    const FlProgram *p = fl_ir_bundle_program(c->bundle, fl_ir_op_get_string(op, "program", "main"));
    const FlVarDesc *like = p ? fl_ir_var_find(fl_ir_block(p, 0), pvar) : NULL;
    FlProgram *d = c->bundle->driver;
    FlBlock *home = NULL;
    for (size_t b = 0; b < d->blocks.len && !home; b++)
        if (fl_ir_var_find(d->blocks.data[b], fetched)) home = d->blocks.data[b];
    if (!like || !home) return fl_ev_error(c, sp, "the offsets '%s' of '%s' are not a var of its program", pvar, fetched);
    FlVarDesc *nv = fl_ev_driver_value_var(c, home, "fetch", like, sp);
    const char **names = fl_arena_alloc(&c->arena, (fn->n + 1) * sizeof *names);
    for (size_t k = 0; k < fn->n; k++) names[k] = fn->strs[k];
    names[fn->n] = pvar;
    size_t n = fn->n + 1;
    fl_ir_op_add_output(op, "Fetch", nv->name);
    fl_ir_op_set_strings(op, "fetch_names", names, n);
    if (!fetch_reaches(c, in, home, nv, sp)) return c->error;
    return fl_v_var(c, nv->name);
}

bool fl_ev_is_lod_lengths(const FlValue *v) { return fl_v_is_rec(v, LENS_TYPE); }

FlValue *fl_ev_lod_lengths_str(Ctx *c, FlValue *v) { return fl_v_rec_get(v, "_str"); }

/* The lod() (offsets) or recursive_sequence_lengths() of a fetched sequence, when the driver
 * gets there: the run that fetched it fetches its offsets too, and each level's lengths are the
 * differences of its offsets. A LoDLengths record: its levels (driver vars of int64) and a
 * runtime string that prints them as Python prints the list of lists. */
static FlValue *fetched_lod(Ctx *c, FlValue *v, const FlVarDesc *from, bool offs, FlSpan sp) {
    FlValue *levels = fl_v_list(c, VK_LIST), *rt = fl_ev_rtstr_new(c);
    fl_ev_rtstr_text(c, rt, "[", 1);
    for (int l = 0; l < from->lod_level; l++) {
        if (!from->lod[l]) return fl_ev_error(c, sp, "level %d of the offsets of '%s' has no var", l, from->name);
        FlValue *o = fetch_also(c, v->var.name, from->lod[l], sp);
        if (o->kind == VK_ERROR) return o;
        if (!offs) {
            const char *sn[4] = {"Input", "axes", "starts", "ends"};
            FlValue *hi_v[4] = {o, fl_v_list(c, VK_LIST), fl_v_list(c, VK_LIST), fl_v_list(c, VK_LIST)};
            FlValue *lo_v[4] = {o, fl_v_list(c, VK_LIST), fl_v_list(c, VK_LIST), fl_v_list(c, VK_LIST)};
            int64_t hv[3] = {0, 1, INT32_MAX}, lv[3] = {0, 0, -1};
            for (int k = 0; k < 3; k++) {
                fl_v_list_push(c, hi_v[k + 1], fl_v_int(c, hv[k]));
                fl_v_list_push(c, lo_v[k + 1], fl_v_int(c, lv[k]));
            }
            FlValue *hi = fl_ev_driver_kwop(c, "slice", sn, hi_v, 4, sp);
            FlValue *lo = hi->kind == VK_ERROR ? hi : fl_ev_driver_kwop(c, "slice", sn, lo_v, 4, sp);
            if (lo->kind == VK_ERROR) return lo;
            const char *dn[2] = {"X", "Y"};
            FlValue *dv[2] = {hi, lo};
            o = fl_ev_driver_kwop(c, "elementwise_sub", dn, dv, 2, sp);
            if (o->kind == VK_ERROR) return o;
        }
        fl_v_list_push(c, levels, o);
        if (l) fl_ev_rtstr_text(c, rt, ", ", 2);
        fl_ev_rtstr_value(c, rt, o, "list");
    }
    fl_ev_rtstr_text(c, rt, "]", 1);
    FlValue *r = fl_v_record(c, LENS_TYPE);
    fl_v_rec_set(c, r, "_levels", levels);
    fl_v_rec_set(c, r, "_str", rt);
    return r;
}

static FlValue *f_fetched_lod(Ctx *c, FlValue *self, CallArgs *a, bool offs) {
    const FlVarDesc *from = fetched_from(c, self->var.name);
    if (from && from->lod_level > 0) return fetched_lod(c, self, from, offs, a->span);
    return fl_v_list(c, VK_LIST); /* no LoD: Fluid's [] */
}

static FlValue *f_lod(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("lod", "", 0);
    (void)v;
    return f_fetched_lod(c, self, a, true);
}

static FlValue *f_lens(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("recursive_sequence_lengths", "", 0);
    (void)v;
    return f_fetched_lod(c, self, a, false);
}

FlValue *fl_ev_lod_fetched_attr(Ctx *c, FlValue *v, const char *name, FlSpan sp) {
    bool lod = strcmp(name, "lod") == 0;
    if (!lod && strcmp(name, "recursive_sequence_lengths") != 0) return NULL;
    (void)sp;
    return fl_v_builtin(c, name, lod ? f_lod : f_lens, v);
}
