/* driver_data.c: data the Fluid way (docs/driver.md, "Data"): readers as compile-time
 * descriptions that the driver's reader ops read at run time. The native module `_reader` (used
 * by stdlib/paddle/reader.fl, stdlib/paddle/dataset/ and stdlib/fluid/data_feeder.fl):
 *
 *   dataset(name, part, args, kwargs, word_idx=, n=)
 *                         paddle.dataset.NAME.part(...): a reader of the module's samples, whose
 *                         fields dataset/ gives (fl_ds_layout; an unknown module is an error); a
 *                         word dict is copied into Bundle.readers when a loop reads the reader
 *   word_dict(name, pattern, cutoff)
 *                         a module's word dict (imikolov.build_dict, imdb.build_dict), read when
 *                         the script compiles
 *   decorate(kind, readers, n, drop_last, check_alignment)
 *                         paddle.batch, paddle.reader.shuffle/firstn/chain/compose/buffered
 *   fields(data)          the field vars of a batch (DataFeeder.feed)
 *   lods(data)            the offsets var of each sequence field of a batch ([rows + 1] int64,
 *                         data var NAME's NAME@LOD0), None for the others
 *
 * A reader is a builtin function (Paddle's reader is a function returning a generator) bound to
 * a Reader record: its kind, inputs, arguments and fields. Calling it gives a ReaderIter record;
 * `for data in reader():` (fl_ev_lower_for_reader) and `next(reader())` read it in the driver:
 * reader_open (once per reader, in the driver's global block: the data is read once), then
 * reader_epoch and reader_next in a runtime loop (lang/lower.c's fl_ev_lower_for_next), so break
 * and continue work. A batch `data` is a ReaderBatch record: its field vars ([rows, width]) and
 * its rows (len(data)). The readers a driver reads are written to Bundle.readers when a loop
 * first reads them (a reader's index is kept in its record).
 */
#include <stdlib.h>
#include <string.h>

#include "dataset/dataset.h"
#include "lang/eval_impl.h"

#define READER_TYPE "Reader"
#define ITER_TYPE "ReaderIter"
#define BATCH_TYPE "ReaderBatch"

static FlValue *get(FlValue *r, const char *name) {
    return r && r->kind == VK_RECORD && r->rec.attrs ? fl_map_find_str(&r->rec.attrs->map, name) : NULL;
}

static bool is_rec(const FlValue *v, const char *type) {
    return v && v->kind == VK_RECORD && !v->rec.cls && v->rec.type && strcmp(v->rec.type, type) == 0;
}

static FlValue *r_call(Ctx *c, FlValue *self, CallArgs *a);

/* The Reader record of a reader value, else NULL. */
static FlValue *reader_of(FlValue *v) {
    return v && v->kind == VK_BUILTIN && v->builtin.fn == r_call ? v->builtin.self : NULL;
}

static FlValue *r_call(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("reader", "", 0);
    (void)v;
    FlValue *it = fl_v_record(c, ITER_TYPE);
    fl_v_rec_set(c, it, "_reader", self);
    fl_v_rec_set(c, it, "_start", fl_v_int(c, -1)); /* enumerate's start; -1: not enumerated */
    /* the driver block its epoch belongs to (made by its first next()): where it was made */
    fl_v_rec_set(c, it, "_home", fl_v_int(c, fl_ev_in_driver(c) ? c->b.block->idx : 0));
    return it;
}

bool fl_ev_is_reader_iter(const FlValue *v) { return is_rec(v, ITER_TYPE); }

/* A new Reader record and its reader value. */
static FlValue *reader_new(Ctx *c, const char *kind, FlValue *inputs, FlValue *fields, bool batched) {
    FlValue *r = fl_v_record(c, READER_TYPE);
    fl_v_rec_set(c, r, "_kind", fl_v_cstr(c, kind));
    fl_v_rec_set(c, r, "_inputs", inputs);
    fl_v_rec_set(c, r, "_fields", fields);
    fl_v_rec_set(c, r, "_batched", fl_v_bool(c, batched));
    return fl_v_builtin(c, "reader", r_call, r);
}

/* The fields of a layout: a list of (dtype, width, name, seq) tuples. */
static FlValue *layout_fields(Ctx *c, const FlDsLayout *l) {
    FlValue *out = fl_v_list(c, VK_LIST);
    for (size_t f = 0; f < l->nfields; f++) {
        FlValue *t = fl_v_list(c, VK_TUPLE);
        fl_v_list_push(c, t, fl_v_int(c, l->fields[f].dtype));
        fl_v_list_push(c, t, fl_v_int(c, (int64_t)l->fields[f].width));
        fl_v_list_push(c, t, fl_v_cstr(c, l->fields[f].name));
        fl_v_list_push(c, t, fl_v_bool(c, l->fields[f].seq));
        fl_v_list_push(c, out, t);
    }
    return out;
}

/* A word dict (a dict of str to int) as dataset/ takes it; the vectors point into the dict. */
static bool dict_args(Ctx *c, FlValue *d, const char *fname, FlSpan sp, FlDsArgs *out, char ***words,
                      int64_t **ids) {
    if (!d || d->kind != VK_DICT)
        return fl_ev_error(c, sp, "%s: word_idx must be a dict of words to ids (imikolov.build_dict()), found %s",
                           fname, d ? fl_v_type_name(d) : "nothing"), false;
    *words = fl_xmalloc(fl_mul_size(d->dict.len + 1, sizeof **words));
    *ids = fl_xmalloc(fl_mul_size(d->dict.len + 1, sizeof **ids));
    for (size_t i = 0; i < d->dict.len; i++) {
        FlValue *k = d->dict.keys[i], *val = d->dict.vals[i];
        if (k->kind != VK_STR || val->kind != VK_INT) {
            free(*words);
            free(*ids);
            return fl_ev_error(c, sp, "%s: word_idx maps %s to %s; it must map words (str) to ids (int)", fname,
                               fl_v_type_name(k), fl_v_type_name(val)), false;
        }
        (*words)[i] = (char *)k->str.s;
        (*ids)[i] = val->i;
    }
    *out = (FlDsArgs){.has_dict = true, .nwords = d->dict.len, .words = *words, .ids = *ids};
    return true;
}

/* dataset(name, part, args, kwargs, word_idx=None, n=0, data_type=0): paddle.dataset.NAME.part(...);
 * the .fl functions of the modules that are read pass their arguments by name (word_idx, n,
 * data_type), the others pass theirs through to be refused. */
static FlValue *d_dataset(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("dataset", "name part args= kwargs= word_idx= n= data_type= n2= lang=", 9);
    if (!fl_ev_want_str(c, v[0], "dataset name", a->span) || !fl_ev_want_str(c, v[1], "dataset part", a->span))
        return c->error;
    FlDsArgs da = {0};
    char **words = NULL;
    int64_t *ids = NULL;
    char fname[128];
    snprintf(fname, sizeof fname, "paddle.dataset.%s.%s", v[0]->str.s, v[1]->str.s);
    if (v[4] && v[4]->kind != VK_NONE && !dict_args(c, v[4], fname, a->span, &da, &words, &ids)) return c->error;
    if ((v[5] && !fl_ev_want_int(c, v[5], "n", a->span, &da.n)) ||
        (v[6] && !fl_ev_want_int(c, v[6], "data_type", a->span, &da.data_type)) ||
        (v[7] && !fl_ev_want_int(c, v[7], "trg_dict_size", a->span, &da.n2)) ||
        (v[8] && v[8]->kind != VK_NONE && !fl_ev_want_str(c, v[8], "src_lang", a->span))) {
        free(words);
        free(ids);
        return c->error;
    }
    if (v[8] && v[8]->kind == VK_STR) da.lang = v[8]->str.s;
    FlDsLayout l;
    FlErr e;
    FlStatus st = fl_ds_layout(v[0]->str.s, v[1]->str.s, &da, &l, &e);
    if (st == FL_OK &&
        ((v[2] && v[2]->kind == VK_TUPLE && v[2]->list.len) || (v[3] && v[3]->kind == VK_DICT && v[3]->dict.len)))
        st = fl_err(&e, "%s() takes no arguments", fname);
    if (st) {
        free(words);
        free(ids);
        return fl_ev_error(c, a->span, "%s", e.msg);
    }
    FlValue *rv = reader_new(c, "dataset", fl_v_list(c, VK_LIST), layout_fields(c, &l), false);
    fl_v_rec_set(c, rv->builtin.self, "_dataset", v[0]);
    fl_v_rec_set(c, rv->builtin.self, "_part", v[1]);
    if (da.has_dict) { /* a copy: the words the reader reads are those of this call */
        FlValue *copy = fl_v_dict(c);
        for (size_t i = 0; i < v[4]->dict.len; i++) fl_v_dict_set(c, copy, v[4]->dict.keys[i], v[4]->dict.vals[i]);
        fl_v_rec_set(c, rv->builtin.self, "_word_idx", copy);
        fl_v_rec_set(c, rv->builtin.self, "_n", fl_v_int(c, da.n));
        fl_v_rec_set(c, rv->builtin.self, "_data_type", fl_v_int(c, da.data_type));
    }
    if (!da.has_dict && da.n) fl_v_rec_set(c, rv->builtin.self, "_n", fl_v_int(c, da.n)); /* wmt's sizes */
    if (da.n2) fl_v_rec_set(c, rv->builtin.self, "_n2", fl_v_int(c, da.n2));
    if (da.lang) fl_v_rec_set(c, rv->builtin.self, "_lang", v[8]);
    free(words);
    free(ids);
    return rv;
}

/* word_dict(name, pattern, cutoff): a module's word dict (imikolov.build_dict(min_word_freq),
 * imdb.build_dict(pattern, cutoff)), read from the cache folder when the script compiles: a dict
 * of str to int. */
static FlValue *d_word_dict(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("word_dict", "name pattern cutoff", 3);
    int64_t cutoff;
    if (!fl_ev_want_int(c, v[2], "the word count cutoff", a->span, &cutoff)) return c->error;
    if (v[1]->kind != VK_NONE && !fl_ev_want_str(c, v[1], "the pattern (a str)", a->span)) return c->error;
    FlDsDict d;
    FlErr e;
    if (fl_ds_dict(v[0]->str.s, v[1]->kind == VK_STR ? v[1]->str.s : NULL, cutoff, &d, &e))
        return fl_ev_error(c, a->span, "%s", e.msg);
    FlValue *out = fl_v_dict(c);
    for (size_t i = 0; i < d.n; i++) fl_v_dict_set(c, out, fl_v_cstr(c, d.words[i]), fl_v_int(c, (int64_t)i));
    fl_ds_dict_free(&d);
    return out;
}

/* Whether two field lists are the same (chain joins only readers of the same fields). */
static bool same_fields(const FlValue *a, const FlValue *b) {
    if (a->list.len != b->list.len) return false;
    for (size_t i = 0; i < a->list.len; i++) {
        FlValue **x = a->list.items[i]->list.items, **y = b->list.items[i]->list.items;
        if (x[0]->i != y[0]->i || x[1]->i != y[1]->i || x[3]->b != y[3]->b) return false;
    }
    return true;
}

/* The map_readers node a reader's samples come through (itself, or below shuffle, buffered,
 * firstn, batch and the decorators of batches, which keep the fields), else NULL. */
static FlValue *mapped_by(FlValue *r) {
    for (int depth = 0; r && depth < 64; depth++) {
        FlValue *k = get(r, "_kind"), *ins = get(r, "_inputs");
        if (!k || k->kind != VK_STR) return NULL;
        if (!strcmp(k->str.s, "map")) return r;
        if (strcmp(k->str.s, "shuffle") && strcmp(k->str.s, "buffered") && strcmp(k->str.s, "firstn") &&
            strcmp(k->str.s, "batch") && strcmp(k->str.s, "shuffle_batches") && strcmp(k->str.s, "concat_batches"))
            return NULL;
        r = ins && ins->list.len ? ins->list.items[0] : NULL;
    }
    return NULL;
}

#define FIELD_TYPE "field of a sample"

/* map(func, readers): paddle.reader.map_readers(func, *readers), Paddle's
 * `for e in zip(*readers): yield func(*e)`, for a func (a lambda or a def) that makes each
 * sample of the fields of the readers' samples: it is called once, when the script compiles, on
 * samples whose fields stand for every sample's, and must give a tuple or list of them (chosen,
 * repeated, reordered: `lambda s: (s[0], s[2])`, `def f(a, b): return a + b`); the runtime's
 * readers then give the zip of the readers (compose with check_alignment=False) and the batch
 * takes those fields. A func that computes with a field is refused where it does: no Python runs
 * per sample here. */
static FlValue *d_map(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("map", "func readers", 2);
    (void)self;
    FlValue *ins = v[1], *inputs = fl_v_list(c, VK_LIST), *all = fl_v_list(c, VK_LIST);
    size_t n = ins->list.len;
    if (!n) return fl_ev_error(c, a->span, "paddle.reader.map_readers(func) needs a reader");
    FlValue **samples = fl_arena_alloc(&c->arena, n * sizeof *samples);
    for (size_t i = 0; i < n; i++) {
        FlValue *r = reader_of(ins->list.items[i]);
        if (!r)
            return fl_ev_error(c, a->span, "paddle.reader.map_readers takes readers (paddle.dataset.NAME.train(), or "
                               "one of paddle.reader's), found %s", fl_v_type_name(ins->list.items[i]));
        if (get(r, "_batched")->b)
            return fl_ev_error(c, a->span, "map_readers of a batched reader: apply paddle.batch last (after "
                               "map_readers)");
        if (mapped_by(r))
            return fl_ev_error(c, a->span, "map_readers of a reader map_readers gives already: make one func of "
                               "the two");
        FlValue *f = get(r, "_fields");
        samples[i] = fl_v_list(c, VK_TUPLE);
        for (size_t k = 0; k < f->list.len; k++) {
            FlValue *fv = fl_v_record(c, FIELD_TYPE);
            fl_v_rec_set(c, fv, "_at", fl_v_int(c, (int64_t)all->list.len));
            fl_v_list_push(c, samples[i], fv);
            fl_v_list_push(c, all, f->list.items[k]);
        }
        fl_v_list_push(c, inputs, r);
    }
    FlValue *out = fl_ev_call_simple(c, v[0], a->span, samples, n);
    if (out->kind == VK_ERROR) {
        fl_diag_note(&c->diag, fl_ev_user_span(c, a->span), "map_readers calls func once, when the script compiles, "
                     "on samples whose fields stand for every sample's: it may choose and order them, and compute "
                     "nothing with them (no Python runs per sample; compute in the program's layers)");
        return out;
    }
    if (!fl_v_is_seq(out) || !out->list.len)
        return fl_ev_error(c, a->span, "paddle.reader.map_readers: func gives %s for a sample, where a sample is a "
                           "tuple or list of fields", fl_v_is_seq(out) ? "an empty one" : is_rec(out, FIELD_TYPE)
                           ? "one field" : fl_v_type_name(out));
    FlValue *fields = fl_v_list(c, VK_LIST), *sel = fl_v_list(c, VK_LIST);
    for (size_t j = 0; j < out->list.len; j++) {
        FlValue *fv = out->list.items[j];
        if (!is_rec(fv, FIELD_TYPE))
            return fl_ev_error(c, a->span, "paddle.reader.map_readers: field %zu of func's sample is %s, not a field "
                               "of the readers' samples: the runtime maps a sample by choosing and ordering its "
                               "fields (no Python runs per sample); compute with the values in the program's "
                               "layers", j, fl_v_type_name(fv));
        FlValue *at = get(fv, "_at");
        fl_v_list_push(c, sel, at);
        fl_v_list_push(c, fields, all->list.items[at->i]);
    }
    FlValue *under = ins->list.items[0];
    if (n > 1) { /* zip: Paddle's compose without its alignment check */
        under = reader_new(c, "compose", inputs, all, false);
        fl_v_rec_set(c, under->builtin.self, "_n", fl_v_int(c, 0));
        fl_v_rec_set(c, under->builtin.self, "_drop_last", fl_v_bool(c, false));
        fl_v_rec_set(c, under->builtin.self, "_check", fl_v_bool(c, false));
    }
    FlValue *one = fl_v_list(c, VK_LIST);
    fl_v_list_push(c, one, reader_of(under));
    FlValue *rv = reader_new(c, "map", one, fields, false);
    fl_v_rec_set(c, rv->builtin.self, "_select", sel);
    return rv;
}

/* decorate(kind, readers, n, drop_last, check_alignment): the decorators of paddle.reader and
 * paddle.batch; the .fl functions check their own argument types. */
static FlValue *d_decorate(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("decorate", "kind readers n drop_last check_alignment", 5);
    const char *kind = v[0]->str.s;
    FlValue *ins = v[1], *inputs = fl_v_list(c, VK_LIST), *fields = NULL;
    bool batched = false;
    for (size_t i = 0; i < ins->list.len; i++) {
        FlValue *r = reader_of(ins->list.items[i]);
        if (!r) {
            if (ins->list.items[i]->kind == VK_READER)
                return fl_ev_error(c, a->span, "paddle.reader.%s of an io.csv reader: io.csv and io.split readers are "
                                   "read by fluid.train (docs/language.md); paddle.batch and paddle.reader take "
                                   "paddle.dataset readers", kind);
            return fl_ev_error(c, a->span, "paddle.reader.%s takes readers (paddle.dataset.NAME.train(), or one of "
                               "paddle.batch and paddle.reader's), found %s", kind,
                               fl_v_type_name(ins->list.items[i]));
        }
        bool b = get(r, "_batched")->b;
        if ((!strcmp(kind, "chain") || !strcmp(kind, "compose")) && mapped_by(r))
            return fl_ev_error(c, a->span, "paddle.reader.%s of a reader map_readers gives: the runtime maps the "
                               "samples where they are batched; %s the readers first, then map_readers", kind, kind);
        bool of_batches = !strcmp(kind, "shuffle_batches") || !strcmp(kind, "concat_batches");
        if (of_batches && !b) /* layers.shuffle and layers.batch of a py_reader: io.fl gives them its batches */
            return fl_ev_error(c, a->span, "%s takes a reader of batches", kind);
        if (b && !of_batches && strcmp(kind, "firstn") != 0 && strcmp(kind, "buffered") != 0)
            return fl_ev_error(c, a->span, "%s of a batched reader: apply paddle.batch last (after %s)",
                               strcmp(kind, "batch") == 0 ? "paddle.batch" : kind, kind);
        batched = batched || b;
        FlValue *f = get(r, "_fields");
        if (!fields) {
            fields = f;
        } else if (strcmp(kind, "compose") == 0) {
            FlValue *all = fl_v_list(c, VK_LIST);
            for (size_t k = 0; k < fields->list.len; k++) fl_v_list_push(c, all, fields->list.items[k]);
            for (size_t k = 0; k < f->list.len; k++) fl_v_list_push(c, all, f->list.items[k]);
            fields = all;
        } else if (!same_fields(fields, f)) {
            return fl_ev_error(c, a->span, "paddle.reader.chain: reader %zu gives samples of other fields than "
                               "reader 1", i + 1);
        }
        fl_v_list_push(c, inputs, r);
    }
    if (!fields) return fl_ev_error(c, a->span, "paddle.reader.%s needs a reader", kind);
    if (fields->list.len > FL_DS_MAX_FIELDS * 4)
        return fl_ev_error(c, a->span, "paddle.reader.compose: %zu fields (at most %d)", fields->list.len,
                           FL_DS_MAX_FIELDS * 4);
    FlValue *rv = reader_new(c, kind, inputs, fields, batched || strcmp(kind, "batch") == 0);
    fl_v_rec_set(c, rv->builtin.self, "_n", v[2]);
    fl_v_rec_set(c, rv->builtin.self, "_drop_last", v[3]);
    fl_v_rec_set(c, rv->builtin.self, "_check", v[4]);
    return rv;
}

/* fields(data): the field vars of a batch; lods(data): the offsets var of each sequence field, None
 * for the others. */
static FlValue *batch_part(Ctx *c, CallArgs *a, const char *part) {
    ARGS("fields", "data", 1);
    if (v[0]->kind == VK_LIST) { /* samples of batches: dense fields (a batch with sequences is not iterated) */
        FlValue *fields = fl_ev_samples_fields(c, v[0], a->span);
        if (fields->kind == VK_ERROR || strcmp(part, "_lods") != 0) return fields;
        FlValue *none = fl_v_list(c, VK_LIST);
        for (size_t i = 0; i < fields->list.len; i++) fl_v_list_push(c, none, c->none);
        return none;
    }
    if (!is_rec(v[0], BATCH_TYPE))
        return fl_ev_error(c, a->span, "DataFeeder.feed(data) takes a batch of a reader (for data in reader(): ...), "
                           "found %s", fl_v_type_name(v[0]));
    return get(v[0], part);
}

static FlValue *d_fields(Ctx *c, FlValue *self, CallArgs *a) { return batch_part(c, a, "_fields"); }

static FlValue *d_lods(Ctx *c, FlValue *self, CallArgs *a) { return batch_part(c, a, "_lods"); }

/* ------------------------------------------------------------------ Bundle.readers */

static char *dup_str(const FlValue *v) { return v && v->kind == VK_STR ? fl_xstrdup(v->str.s) : NULL; }

/* The index of reader record r in Bundle.readers, its inputs written first. */
static int32_t emit(Ctx *c, FlValue *r) {
    FlValue *ix = get(r, "_index");
    if (ix) return (int32_t)ix->i;
    FlValue *kd = get(r, "_kind");
    if (kd && kd->kind == VK_STR && !strcmp(kd->str.s, "map")) /* the runtime reads its input: next_batch maps */
        return emit(c, get(r, "_inputs")->list.items[0]);
    FlReaderDesc *d = fl_xcalloc(1, sizeof *d);
    FlValue *ins = get(r, "_inputs");
    for (size_t i = 0; i < ins->list.len; i++) {
        int32_t k = emit(c, ins->list.items[i]);
        FL_VEC_PUSH(&d->inputs, k);
    }
    d->kind = dup_str(get(r, "_kind"));
    d->dataset = dup_str(get(r, "_dataset"));
    d->part = dup_str(get(r, "_part"));
    FlValue *n = get(r, "_n"), *dl = get(r, "_drop_last"), *ck = get(r, "_check"), *wi = get(r, "_word_idx");
    d->n = n && n->kind == VK_INT ? n->i : 0;
    FlValue *dt = get(r, "_data_type");
    d->data_type = dt && dt->kind == VK_INT ? dt->i : 0;
    FlValue *n2 = get(r, "_n2");
    d->n2 = n2 && n2->kind == VK_INT ? n2->i : 0;
    d->lang = dup_str(get(r, "_lang"));
    for (size_t i = 0; wi && i < wi->dict.len; i++) { /* d_dataset checked its keys and values */
        FL_VEC_PUSH(&d->words, fl_xstrdup(wi->dict.keys[i]->str.s));
        FL_VEC_PUSH(&d->word_ids, wi->dict.vals[i]->i);
    }
    d->drop_last = dl && dl->kind == VK_BOOL && dl->b;
    d->check_alignment = ck && ck->kind == VK_BOOL && ck->b;
    /* a MultiSlot dataset's files and slots (driver_dataset.c checked them) */
    FlValue *msf = get(r, "_files"), *msn = get(r, "_slot_names"), *mst = get(r, "_slot_types"),
            *msw = get(r, "_slot_widths");
    for (size_t i = 0; msf && i < msf->list.len; i++) FL_VEC_PUSH(&d->files, fl_xstrdup(msf->list.items[i]->str.s));
    for (size_t i = 0; msn && i < msn->list.len; i++) {
        FL_VEC_PUSH(&d->slot_names, fl_xstrdup(msn->list.items[i]->str.s));
        FL_VEC_PUSH(&d->slot_types, fl_xstrdup(mst->list.items[i]->str.s));
        FL_VEC_PUSH(&d->slot_widths, msw->list.items[i]->i);
    }
    /* a ctr_reader's slot keys, line format and file type (driver_dataset.c checked them) */
    FlValue *ck2 = get(r, "_slot_keys"), *lf = get(r, "_line_format"), *gz = get(r, "_gzip");
    for (size_t i = 0; ck2 && i < ck2->list.len; i++) FL_VEC_PUSH(&d->slot_keys, ck2->list.items[i]->i);
    d->line_format = dup_str(lf);
    d->gzip = gz && gz->kind == VK_BOOL && gz->b;
    /* open_files' shapes, LoD levels and passes (driver_dataset.c's recordio) */
    FlValue *sc = get(r, "_shape_concat"), *rk = get(r, "_ranks"), *ll = get(r, "_lod_levels");
    for (size_t i = 0; sc && i < sc->list.len; i++) FL_VEC_PUSH(&d->shape_concat, sc->list.items[i]->i);
    for (size_t i = 0; rk && i < rk->list.len; i++) FL_VEC_PUSH(&d->ranks, rk->list.items[i]->i);
    for (size_t i = 0; ll && i < ll->list.len; i++) FL_VEC_PUSH(&d->lod_levels, ll->list.items[i]->i);
    FlValue *pn = get(r, "_pass_num");
    d->pass_num = pn && pn->kind == VK_INT ? pn->i : 0;
    FL_VEC_PUSH(&c->bundle->readers, d);
    int32_t idx = (int32_t)(c->bundle->readers.len - 1);
    fl_v_rec_set(c, r, "_index", fl_v_int(c, idx));
    return idx;
}

/* A new var of the current block (of the driver). */
static const char *new_var(Ctx *c, const char *prefix, FlDType dt, int nd, const int64_t *shape, FlSpan sp) {
    const char *name = fl_arena_printf(&c->arena, "%s.tmp_0", fl_ev_unique(c, prefix));
    FlVarDesc *d = fl_ev_new_var(c, c->b.block, name, sp);
    d->dtype = dt;
    if (nd >= 0) fl_ir_var_set_shape(d, nd, shape);
    d->stop_gradient = true;
    return name;
}

/* The var holding reader r opened: a reader_open appended to the driver's global block the first
 * time (before the loop being built, which is appended after its body). */
static const char *opened(Ctx *c, FlValue *r, FlSpan sp) {
    FlValue *ov = get(r, "_open");
    if (ov) return ov->var.name;
    int32_t idx = emit(c, r);
    FlBlock *saved = c->b.block;
    c->b.block = fl_ir_block(fl_ev_driver(c), 0);
    const char *name = new_var(c, "reader", FL_DT_FLOAT32, -1, NULL, sp);
    FlOpDesc *op = fl_ev_op_raw(c, c->b.block, "reader_open", sp);
    fl_ir_op_set_int(op, "reader", idx);
    fl_ir_op_add_output(op, "Out", name);
    bool ok = fl_ev_infer(c, c->b.block, op, sp);
    c->b.block = saved;
    if (!ok) return NULL;
    fl_v_rec_set(c, r, "_open", fl_v_var(c, name));
    return name;
}

/* reader_epoch of reader r in the current block: the epoch var (into, else a new one). */
static const char *epoch_into(Ctx *c, FlValue *r, const char *into, FlSpan sp) {
    const char *rd = opened(c, r, sp);
    if (!rd) return NULL;
    const char *name = into ? into : new_var(c, "reader_epoch", FL_DT_FLOAT32, -1, NULL, sp);
    FlOpDesc *op = fl_ev_op_raw(c, c->b.block, "reader_epoch", sp);
    fl_ir_op_add_input(op, "Reader", rd);
    fl_ir_op_add_output(op, "Out", name);
    return fl_ev_infer(c, c->b.block, op, sp) ? name : NULL;
}

static const char *epoch(Ctx *c, FlValue *r, FlSpan sp) { return epoch_into(c, r, NULL, sp); }

typedef struct NextArg {
    FlValue *reader;
    const char *epoch, *counter; /* counter: enumerate's, else NULL */
} NextArg;

/* reader_next of the epoch into `sub`: a ReaderBatch (and with enumerate, (i, batch)). */
static FlValue *next_batch(Ctx *c, FlBlock *sub, const char *ok, void *arg, FlSpan sp) {
    NextArg *na = arg;
    FlValue *map = mapped_by(na->reader); /* the reader's fields, then map_readers' choice of them */
    FlValue *fields = get(map ? get(map, "_inputs")->list.items[0] : na->reader, "_fields");
    FlValue *vars = fl_v_list(c, VK_LIST), *lods = fl_v_list(c, VK_LIST);
    FlOpDesc *op = fl_ev_op_raw(c, sub, "reader_next", sp);
    fl_ir_op_add_input(op, "Epoch", na->epoch);
    for (size_t f = 0; f < fields->list.len; f++) {
        FlValue **t = fields->list.items[f]->list.items;
        int64_t shape[2] = {-1, t[1]->i}, nlod = -1;
        const char *name = new_var(c, "reader_data", (FlDType)t[0]->i, 2, shape, sp);
        fl_ir_op_add_output(op, "Out", name);
        fl_v_list_push(c, vars, fl_v_var(c, name));
        if (!t[3]->b) {
            fl_v_list_push(c, lods, c->none);
            continue;
        }
        const char *lod = new_var(c, "reader_lod", FL_DT_INT64, 1, &nlod, sp); /* a sequence: its offsets */
        fl_ir_op_add_output(op, "Out", lod);
        fl_v_list_push(c, lods, fl_v_var(c, lod));
    }
    int64_t one = 1;
    const char *rows = new_var(c, "reader_rows", FL_DT_INT64, 1, &one, sp);
    fl_ir_op_add_output(op, "Rows", rows);
    fl_ir_op_add_output(op, "Ok", ok);
    if (!fl_ev_infer(c, sub, op, sp)) return c->error;
    if (map) {
        FlValue *sel = get(map, "_select"), *mv = fl_v_list(c, VK_LIST), *ml = fl_v_list(c, VK_LIST);
        for (size_t j = 0; j < sel->list.len; j++) {
            fl_v_list_push(c, mv, vars->list.items[sel->list.items[j]->i]);
            fl_v_list_push(c, ml, lods->list.items[sel->list.items[j]->i]);
        }
        vars = mv;
        lods = ml;
    }
    FlValue *batch = fl_v_record(c, BATCH_TYPE);
    fl_v_rec_set(c, batch, "_fields", vars);
    fl_v_rec_set(c, batch, "_lods", lods);
    fl_v_rec_set(c, batch, "__len__", fl_v_var(c, rows));
    fl_v_rec_set(c, batch, "_reader", na->reader); /* its size, for its samples (driver_batch.c) */
    if (!na->counter) return batch;
    /* the index as a number (rank 0), as Python's int prints: index 0 of the counter */
    FlValue *i = fl_ev_driver_index(c, fl_v_var(c, na->counter), fl_v_int(c, 0), sp);
    if (i->kind == VK_ERROR) return i;
    FlOpDesc *inc = fl_ev_op_raw(c, sub, "increment", sp);
    fl_ir_op_add_input(inc, "X", na->counter);
    fl_ir_op_add_output(inc, "Out", na->counter);
    if (!fl_ev_infer(c, sub, inc, sp)) return c->error;
    FlValue *pair = fl_v_list(c, VK_TUPLE);
    fl_v_list_push(c, pair, i);
    fl_v_list_push(c, pair, batch);
    return pair;
}

Flow fl_ev_lower_for_reader(Ctx *c, Env *e, FlAst *s, FlValue *it) {
    DriverSwap sw; /* a reader is read by the driver */
    fl_ev_driver_enter(c, &sw);
    Flow f = FLOW_ERROR;
    NextArg na = {.reader = get(it, "_reader")};
    int64_t start = get(it, "_start")->i;
    if (!(na.epoch = epoch(c, na.reader, s->loop.iter->span))) goto done;
    if (start >= 0) {
        FlValue *cv = fl_ev_const_var(c, fl_v_int(c, start), FL_DT_INT64, s->span);
        if (cv->kind == VK_ERROR) goto done;
        na.counter = cv->var.name;
    }
    f = fl_ev_lower_for_next(c, e, s, next_batch, &na);
done:
    fl_ev_driver_leave(c, &sw);
    return f;
}

FlValue *fl_ev_reader_enumerate(Ctx *c, FlValue *it, FlValue *start, FlSpan sp) {
    int64_t st = 0;
    if (start && !fl_ev_want_int(c, start, "start", sp, &st)) return c->error;
    if (st < 0) return fl_ev_error(c, sp, "enumerate() of a reader: start %lld is negative", (long long)st);
    if (get(it, "_start")->i >= 0) return fl_ev_error(c, sp, "enumerate() of an enumerated reader");
    FlValue *r = fl_v_record(c, ITER_TYPE);
    fl_v_rec_set(c, r, "_reader", get(it, "_reader"));
    fl_v_rec_set(c, r, "_start", fl_v_int(c, st));
    return r;
}

bool fl_ev_is_reader_batch(const FlValue *v) { return is_rec(v, BATCH_TYPE); }

/* [s[k] for s in data] over a batch (Paddle's book: numpy.array([d[0] for d in data])): the
 * samples' field k, one row each, which is the batch's field var k ([rows, width]) itself; the
 * comprehension runs once, its target bound to the tuple of the batch's field vars.
 * [[s[0], s[2]] for s in data] (machine_translation's feeder.feed([[x[0]] for x in data])) is a
 * batch of those fields. Anything else over a batch is an error: its samples are read when the
 * program runs. */
FlValue *fl_ev_batch_comp(Ctx *c, Env *scope, FlAst *n, FlValue *batch) {
    FlAst *cl = n->comp.clauses.items[0];
    if (n->kind != FL_AST_LISTCOMP || n->comp.clauses.len != 1 || cl->loop.target->kind != FL_AST_NAME)
        return fl_ev_error(c, n->span, "a comprehension over a reader's batch is compiled only as [s[k] for s in "
                                       "data] (field k of each sample, as one array): the samples are read when "
                                       "the program runs");
    FlValue *fields = get(batch, "_fields"), *sample = fl_v_list(c, VK_TUPLE);
    for (size_t i = 0; i < fields->list.len; i++) fl_v_list_push(c, sample, fields->list.items[i]);
    fl_env_set(scope, cl->loop.target->name, sample);
    FlValue *x = fl_ev_expr(c, scope, n->comp.elt);
    if (x->kind == VK_ERROR) return x;
    for (size_t i = 0; i < fields->list.len; i++)
        if (x == fields->list.items[i]) return x;
    if (fl_v_is_seq(x) && x->list.len) { /* [[s[0]] for s in data]: a batch of those fields of each sample */
        FlValue *lods = get(batch, "_lods"), *fs = fl_v_list(c, VK_LIST), *ls = fl_v_list(c, VK_LIST);
        for (size_t k = 0; k < x->list.len; k++) {
            size_t i = 0;
            while (i < fields->list.len && x->list.items[k] != fields->list.items[i]) i++;
            if (i == fields->list.len) break;
            fl_v_list_push(c, fs, fields->list.items[i]);
            fl_v_list_push(c, ls, lods->list.items[i]);
        }
        if (fs->list.len == x->list.len) {
            FlValue *sub = fl_v_record(c, BATCH_TYPE);
            fl_v_rec_set(c, sub, "_fields", fs);
            fl_v_rec_set(c, sub, "_lods", ls);
            fl_v_rec_set(c, sub, "__len__", get(batch, "__len__"));
            fl_v_rec_set(c, sub, "_reader", get(batch, "_reader"));
            return sub;
        }
    }
    return fl_ev_error(c, n->comp.elt->span, "a comprehension over a reader's batch takes one field of each sample "
                                             "([s[k] for s in data]) or a list of fields ([[s[0], s[2]] for s in "
                                             "data]: a batch of those fields), found %s", fl_v_type_name(x));
}

/* next(it): the next batch of the iterator's epoch, which its first next() starts in the driver
 * block where the iterator was made (before the loop being built there, appended after its
 * body): next(reader()) is a new epoch's first batch, and a generator kept in a variable
 * (g = reader(); ... next(g) in a loop) gives its batches one after the other, as Python's. */
static FlValue *b_next(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("next", "iterator default=", 2);
    if (!fl_ev_is_reader_iter(v[0]))
        return fl_ev_error(c, a->span, "next() takes a reader's iterator (next(reader())), found %s",
                           fl_v_type_name(v[0]));
    if (v[1]) return fl_ev_error(c, a->span, "next(reader(), default): a default is not compiled: a reader's first "
                                 "batch is known only when the program runs");
    if (get(v[0], "_start")->i >= 0) return fl_ev_error(c, a->span, "next() of enumerate(reader()) is not compiled");
    DriverSwap sw;
    fl_ev_driver_enter(c, &sw);
    NextArg na = {.reader = get(v[0], "_reader")};
    FlValue *r = c->error, *ep = get(v[0], "_epoch");
    if (ep) {
        na.epoch = ep->var.name;
    } else {
        FlBlock *here = c->b.block;
        c->b.block = fl_ir_block(fl_ev_driver(c), (int)get(v[0], "_home")->i);
        na.epoch = epoch(c, na.reader, a->span);
        c->b.block = here;
        if (na.epoch) fl_v_rec_set(c, v[0], "_epoch", fl_v_var(c, na.epoch));
    }
    if (na.epoch) {
        int64_t one = 1;
        const char *ok = new_var(c, "reader_ok", FL_DT_BOOL, 1, &one, a->span);
        r = next_batch(c, c->b.block, ok, &na, a->span);
    }
    fl_ev_driver_leave(c, &sw);
    return r;
}

/* recordio_write(filename, reader, vars, max_num_records, compressor, batch_per_file):
 * fluid.recordio_writer's conversions (the stdlib checked their arguments): a reader_epoch of the
 * batched reader and a recordio_write of it in the driver, each batch a record of the vars'
 * tensors (each field cast and shaped as its var, as DataFeeder.feed does), into one file or
 * (batch_per_file > 0) Fluid's numbered files; the number of records (an int64 [1] driver var). */
static FlValue *d_recordio_write(Ctx *c, FlValue *self, CallArgs *a) {
    (void)self;
    ARGS("recordio_write", "filename reader vars max_num_records compressor batch_per_file", 6);
    const char *what = v[5]->i > 0 ? "fluid.recordio_writer.convert_reader_to_recordio_files"
                                   : "fluid.recordio_writer.convert_reader_to_recordio_file";
    FlValue *r = reader_of(v[1]), *vars = v[2];
    if (!r || !get(r, "_batched")->b)
        return fl_ev_error(c, a->span, "%s takes a reader of batches (paddle.batch(paddle.dataset.NAME.train(), "
                           "batch_size)), found %s", what, r ? "a reader of samples" : fl_v_type_name(v[1]));
    if (mapped_by(r))
        return fl_ev_error(c, a->span, "%s of a reader map_readers gives is not compiled: write the readers' "
                           "samples as they are", what);
    FlValue *fields = get(r, "_fields");
    if (fields->list.len != vars->list.len)
        return fl_ev_error(c, a->span, "%s: the reader's samples have %zu fields but the feeder's feed_order names %zu "
                           "vars", what, fields->list.len, vars->list.len);
    FlValue *dtypes = fl_v_list(c, VK_LIST), *ranks = fl_v_list(c, VK_LIST), *dims = fl_v_list(c, VK_LIST);
    for (size_t i = 0; i < vars->list.len; i++) {
        FlVarDesc *d = vars->list.items[i]->kind == VK_VAR ? fl_ev_var_desc(c, vars->list.items[i]) : NULL;
        if (!d || d->ndim < 1) return fl_ev_error(c, a->span, "%s: feed var %zu is no data var", what, i);
        FlValue **t = fields->list.items[i]->list.items;
        int64_t w = 1;
        for (int k = 1; k < d->ndim; k++) {
            if (d->shape[k] < 1)
                return fl_ev_error(c, a->span, "%s: var '%s' has an unknown dim %d: a record's row width is declared",
                                   what, d->name, k);
            w *= d->shape[k];
        }
        if (w != t[1]->i)
            return fl_ev_error(c, a->span, "%s: field %zu of the reader's samples holds %lld values but var '%s' "
                               "takes %lld a row", what, i, (long long)t[1]->i, d->name, (long long)w);
        if (t[3]->b != (d->lod_level == 1))
            return fl_ev_error(c, a->span, "%s: field %zu of the reader's samples %s a sequence but var '%s' has "
                               "lod_level %d", what, i, t[3]->b ? "is" : "is not", d->name, d->lod_level);
        fl_v_list_push(c, dtypes, fl_v_cstr(c, fl_dtype_name(d->dtype)));
        fl_v_list_push(c, ranks, fl_v_int(c, d->ndim));
        for (int k = 0; k < d->ndim; k++) fl_v_list_push(c, dims, fl_v_int(c, d->shape[k]));
    }
    DriverSwap sw;
    fl_ev_driver_enter(c, &sw);
    FlValue *out = c->error;
    const char *ep = epoch(c, r, a->span);
    if (ep) {
        int64_t one = 1;
        const char *n = new_var(c, "recordio_records", FL_DT_INT64, 1, &one, a->span);
        FlOpDesc *op = fl_ev_op_raw(c, c->b.block, "recordio_write", a->span);
        fl_ir_op_add_input(op, "Epoch", ep);
        fl_ir_op_add_output(op, "Out", n);
        fl_ir_op_set_string(op, "file_path", v[0]->str.s);
        const char **ds = fl_arena_alloc(&c->arena, (dtypes->list.len + 1) * sizeof *ds);
        int64_t *rs = fl_arena_alloc(&c->arena, (ranks->list.len + 1) * sizeof *rs);
        int64_t *sc = fl_arena_alloc(&c->arena, (dims->list.len + 1) * sizeof *sc);
        for (size_t i = 0; i < dtypes->list.len; i++) ds[i] = dtypes->list.items[i]->str.s;
        for (size_t i = 0; i < ranks->list.len; i++) rs[i] = ranks->list.items[i]->i;
        for (size_t i = 0; i < dims->list.len; i++) sc[i] = dims->list.items[i]->i;
        fl_ir_op_set_strings(op, "dtypes", ds, dtypes->list.len);
        fl_ir_op_set_ints(op, "ranks", rs, ranks->list.len);
        fl_ir_op_set_ints(op, "shape_concat", sc, dims->list.len);
        fl_ir_op_set_int(op, "max_num_records", v[3]->i);
        fl_ir_op_set_int(op, "compressor", v[4]->i);
        fl_ir_op_set_int(op, "batch_per_file", v[5]->i);
        if (fl_ev_infer(c, c->b.block, op, a->span)) out = fl_v_var(c, n);
    }
    fl_ev_driver_leave(c, &sw);
    return out;
}

/* ------------------------------------------------------------------ for the py_reader family (driver_pyreader.c) */

FlValue *fl_ev_reader_record(FlValue *v) { return reader_of(v); }

/* ------------------------------------------------------------------ for Fluid's Dataset API (driver_dataset.c) */

FlValue *fl_ev_reader_source(Ctx *c, const char *kind, const FlDsLayout *l) {
    return reader_new(c, kind, fl_v_list(c, VK_LIST), layout_fields(c, l), false);
}

FlValue *fl_ev_reader_attr(FlValue *r, const char *name) { return get(r, name); }

const char *fl_ev_reader_epoch_into(Ctx *c, FlValue *r, const char *into, FlSpan sp) {
    return epoch_into(c, r, into, sp);
}

FlValue *fl_ev_reader_next_fields(Ctx *c, FlBlock *sub, const char *ok, FlValue *r, const char *epoch_var,
                                  FlValue **lods, FlSpan sp) {
    NextArg na = {.reader = r, .epoch = epoch_var};
    FlValue *b = next_batch(c, sub, ok, &na, sp);
    *lods = b->kind == VK_ERROR ? b : get(b, "_lods");
    return b->kind == VK_ERROR ? b : get(b, "_fields");
}

/* fetch(name): paddle.dataset.NAME.fetch(), which downloads the module's files in Paddle: here
 * the files must be in the cache already; each reader is read once to say so when the script
 * compiles (fl_ds_fetch; the error names a missing file and how to get it). */
static FlValue *d_fetch(Ctx *c, FlValue *self, CallArgs *a) {
    (void)self;
    ARGS("fetch", "name", 1);
    if (!fl_ev_want_str(c, v[0], "dataset name", a->span)) return c->error;
    FlErr e;
    if (fl_ds_fetch(v[0]->str.s, &e) != FL_OK) return fl_ev_error(c, a->span, "%s", e.msg);
    return c->none;
}

/* movielens_meta(): what paddle.dataset.movielens gives when a script compiles, read from the
 * cache folder: a dict of max_user_id, max_movie_id, max_job_id (ints), categories and titles
 * (dicts of str to int). */
static FlValue *d_movielens_meta(Ctx *c, FlValue *self, CallArgs *a) {
    (void)self;
    ARGS("movielens_meta", "", 0);
    (void)v;
    FlDsMovielens m;
    FlErr e;
    if (fl_ds_movielens_meta(&m, &e)) return fl_ev_error(c, a->span, "%s", e.msg);
    FlValue *out = fl_v_dict(c);
    fl_v_dict_set(c, out, fl_v_cstr(c, "max_user_id"), fl_v_int(c, m.max_user_id));
    fl_v_dict_set(c, out, fl_v_cstr(c, "max_movie_id"), fl_v_int(c, m.max_movie_id));
    fl_v_dict_set(c, out, fl_v_cstr(c, "max_job_id"), fl_v_int(c, m.max_job_id));
    const FlDsDict *ds[2] = {&m.categories, &m.titles};
    const char *names[2] = {"categories", "titles"};
    for (int k = 0; k < 2; k++) {
        FlValue *d = fl_v_dict(c);
        for (size_t i = 0; i < ds[k]->n; i++) fl_v_dict_set(c, d, fl_v_cstr(c, ds[k]->words[i]), fl_v_int(c, (int64_t)i));
        fl_v_dict_set(c, out, fl_v_cstr(c, names[k]), d);
    }
    fl_ds_movielens_fini(&m);
    return out;
}

/* file(name, file, alt): the path of a file of module NAME's cache folder (conll05.get_embedding()
 * gives its emb file's), or of `alt` (None, or the name Paddle's download gives the file) when
 * only that is there; a missing file is an error naming it and how to get it. */
static FlValue *d_file(Ctx *c, FlValue *self, CallArgs *a) {
    (void)self;
    ARGS("file", "name file alt", 3);
    if (!fl_ev_want_str(c, v[0], "dataset name", a->span) || !fl_ev_want_str(c, v[1], "file name", a->span) ||
        (v[2]->kind != VK_NONE && !fl_ev_want_str(c, v[2], "file name", a->span)))
        return c->error;
    FlErr e;
    char *path = fl_ds_file(v[0]->str.s, v[1]->str.s, v[2]->kind == VK_STR ? v[2]->str.s : NULL, &e);
    if (!path) return fl_ev_error(c, a->span, "%s", e.msg);
    FlValue *r = fl_v_cstr(c, path);
    free(path);
    return r;
}

static const NativeFn reader_fns[] = {
    {"movielens_meta", d_movielens_meta},
    {"file", d_file},
    {"dataset", d_dataset},
    {"fetch", d_fetch},
    {"decorate", d_decorate},
    {"map", d_map},
    {"fields", d_fields},
    {"lods", d_lods},
    {"word_dict", d_word_dict},
    {"recordio_write", d_recordio_write},
};

void fl_ev_driver_data_install(Ctx *c) {
    fl_ev_module_of_fns(c, "_reader", reader_fns, FL_ARRAY_LEN(reader_fns));
    fl_env_set(c->builtins, fl_intern_str(&c->in, "next"), fl_v_builtin(c, "next", b_next, NULL));
}
