/* driver_dataset.c: Fluid's Dataset API (stdlib/fluid/dataset.fl; docs/data.md, "Fluid's
 * Dataset: MultiSlot files"). The native module `_dataset`:
 *
 *   multislot(files, names, types, widths)
 *                 a reader of the instances of MultiSlot text files (dataset/multislot.c), one
 *                 sample per line, one field per used slot: a source of Bundle.readers (kind
 *                 "multislot") that paddle.batch and paddle.reader.shuffle decorate and
 *                 `for data in reader():` reads, as a paddle.dataset reader; the files are read
 *                 when the driver opens it
 *   ctr(files, names, types, widths, keys, line_format, gzip, threads)
 *                 the reader of fluid.contrib.ctr_reader's svm or csv files (dataset/ctr.c): a
 *                 source of Bundle.readers (kind "ctr"), read when the driver opens it
 *   recordio(files, names, dtypes, widths, shape_concat, ranks, lod_levels, threads, pass_num)
 *                 the reader of fluid.layers.open_files' RecordIO files (runtime/core/
 *                 reader_files.c): one sample per record (a batch of its own), one field per
 *                 declared shape; a source of Bundle.readers (kind "recordio"), read when the
 *                 driver opens it, by `threads` threads
 *   feed_desc(path)
 *                 a DataFeedDesc in protobuf's text format (Fluid's data_feed.proto: name,
 *                 batch_size, pipe_command, multi_slot_desc { slots { name type is_dense is_used
 *                 shape } }), read when the script compiles: a dict of those fields, the slots a
 *                 list of dicts; a field data_feed.proto has not, or a value of the wrong kind, is
 *                 an error naming PATH:LINE
 */
#include <stdlib.h>
#include <string.h>

#include "dataset/dataset.h"
#include "lang/eval_impl.h"

static bool str_list(Ctx *c, FlValue *v, const char *what, FlSpan sp) {
    if (!v || (v->kind != VK_LIST && v->kind != VK_TUPLE))
        return fl_ev_error(c, sp, "%s must be a list, found %s", what, v ? fl_v_type_name(v) : "nothing"), false;
    for (size_t i = 0; i < v->list.len; i++)
        if (v->list.items[i]->kind != VK_STR)
            return fl_ev_error(c, sp, "%s must be a list of str, found %s at %zu", what,
                               fl_v_type_name(v->list.items[i]), i), false;
    return true;
}

static FlValue *d_multislot(Ctx *c, FlValue *self, CallArgs *a) {
    (void)self;
    ARGS("multislot", "files names types widths", 4);
    if (!str_list(c, v[0], "the file list", a->span) || !str_list(c, v[1], "the slot names", a->span) ||
        !str_list(c, v[2], "the slot types", a->span))
        return c->error;
    size_t n = v[1]->list.len;
    if (v[2]->list.len != n || (v[3]->kind != VK_LIST && v[3]->kind != VK_TUPLE) || v[3]->list.len != n)
        return fl_ev_error(c, a->span, "multislot: a name, a type and a width for each slot");
    FlDsSlot *slots = fl_xcalloc(n + 1, sizeof *slots);
    for (size_t i = 0; i < n; i++) {
        const char *t = v[2]->list.items[i]->str.s;
        FlValue *w = v[3]->list.items[i];
        if ((strcmp(t, "uint64") != 0 && strcmp(t, "float") != 0) || w->kind != VK_INT || w->i < -1) {
            free(slots);
            return fl_ev_error(c, a->span, "slot '%s': type '%s' (a MultiSlot slot is \"uint64\" or \"float\")",
                               v[1]->list.items[i]->str.s, t);
        }
        slots[i] = (FlDsSlot){v[1]->list.items[i]->str.s, strcmp(t, "float") == 0, w->i};
    }
    FlDsLayout l;
    FlErr e;
    FlStatus st = fl_ds_multislot_layout(slots, n, &l, &e);
    free(slots);
    if (st) return fl_ev_error(c, a->span, "%s", e.msg);
    FlValue *rv = fl_ev_reader_source(c, "multislot", &l);
    FlValue *r = fl_ev_reader_record(rv);
    const char *attrs[4] = {"_files", "_slot_names", "_slot_types", "_slot_widths"};
    for (int k = 0; k < 4; k++) { /* copies: later changes of the script's lists do not reach the reader */
        FlValue *copy = fl_v_list(c, VK_LIST);
        for (size_t i = 0; i < v[k]->list.len; i++) fl_v_list_push(c, copy, v[k]->list.items[i]);
        fl_v_rec_set(c, r, attrs[k], copy);
    }
    return rv;
}

/* ctr(files, names, types, widths, keys, line_format, gzip, threads): the reader of a
 * fluid.contrib.ctr_reader's files (dataset/ctr.c): one sample per line, one field per var of the
 * reader (the stdlib checked the vars and made the slots); a source (kind "ctr") that
 * paddle.batch decorates, its files read when the driver opens it, by `threads` threads. */
static FlValue *d_ctr(Ctx *c, FlValue *self, CallArgs *a) {
    (void)self;
    ARGS("ctr", "files names types widths keys line_format gzip threads", 8);
    if (!str_list(c, v[0], "the file list", a->span) || !str_list(c, v[1], "the slot names", a->span) ||
        !str_list(c, v[2], "the slot types", a->span) || !fl_ev_want_str(c, v[5], "the line format", a->span))
        return c->error;
    size_t n = v[1]->list.len;
    bool lists = (v[3]->kind == VK_LIST || v[3]->kind == VK_TUPLE) && (v[4]->kind == VK_LIST || v[4]->kind == VK_TUPLE);
    if (v[2]->list.len != n || !lists || v[3]->list.len != n || v[4]->list.len != n || v[6]->kind != VK_BOOL ||
        v[7]->kind != VK_INT || v[7]->i < 1)
        return fl_ev_error(c, a->span, "ctr: a name, a type, a width and a key for each slot, a bool and threads");
    FlDsSlot *slots = fl_xcalloc(n + 1, sizeof *slots);
    int64_t *keys = fl_xcalloc(n + 1, sizeof *keys);
    for (size_t i = 0; i < n; i++) {
        FlValue *w = v[3]->list.items[i], *k = v[4]->list.items[i];
        if (w->kind != VK_INT || k->kind != VK_INT) {
            free(slots);
            free(keys);
            return fl_ev_error(c, a->span, "ctr: slot '%s': width and key are ints", v[1]->list.items[i]->str.s);
        }
        slots[i] = (FlDsSlot){v[1]->list.items[i]->str.s, strcmp(v[2]->list.items[i]->str.s, "float") == 0, w->i};
        keys[i] = k->i;
    }
    const char *fmt = v[5]->str.s;
    FlDsCtr d = {strcmp(fmt, "csv") == 0, v[6]->b, (size_t)v[7]->i, NULL, 0, slots, keys, n};
    FlDsLayout l;
    FlErr e;
    FlStatus st = strcmp(fmt, "csv") != 0 && strcmp(fmt, "svm") != 0
                      ? fl_err(&e, "ctr: line format '%s' (\"svm\" or \"csv\")", fmt)
                      : fl_ds_ctr_layout(&d, &l, &e);
    free(slots);
    free(keys);
    if (st) return fl_ev_error(c, a->span, "%s", e.msg);
    FlValue *rv = fl_ev_reader_source(c, "ctr", &l);
    FlValue *r = fl_ev_reader_record(rv);
    const char *attrs[5] = {"_files", "_slot_names", "_slot_types", "_slot_widths", "_slot_keys"};
    for (int k = 0; k < 5; k++) { /* copies: later changes of the script's lists do not reach the reader */
        FlValue *copy = fl_v_list(c, VK_LIST);
        for (size_t i = 0; i < v[k]->list.len; i++) fl_v_list_push(c, copy, v[k]->list.items[i]);
        fl_v_rec_set(c, r, attrs[k], copy);
    }
    fl_v_rec_set(c, r, "_line_format", v[5]);
    fl_v_rec_set(c, r, "_gzip", v[6]);
    fl_v_rec_set(c, r, "_n", v[7]);
    return rv;
}

static bool int_list(const FlValue *v) {
    if (v->kind != VK_LIST && v->kind != VK_TUPLE) return false;
    for (size_t i = 0; i < v->list.len; i++)
        if (v->list.items[i]->kind != VK_INT) return false;
    return true;
}

/* recordio(files, names, dtypes, widths, shape_concat, ranks, lod_levels, threads, pass_num):
 * open_files' source (the stdlib checked the arguments and made the widths and ranks). */
static FlValue *d_recordio(Ctx *c, FlValue *self, CallArgs *a) {
    (void)self;
    ARGS("recordio", "files names dtypes widths shape_concat ranks lod_levels threads pass_num", 9);
    if (!str_list(c, v[0], "the file list", a->span) || !str_list(c, v[1], "the field names", a->span) ||
        !str_list(c, v[2], "the dtypes", a->span))
        return c->error;
    size_t n = v[1]->list.len;
    if (!n || n > FL_DS_MAX_FIELDS || v[2]->list.len != n || !int_list(v[3]) || v[3]->list.len != n ||
        !int_list(v[4]) || !int_list(v[5]) || v[5]->list.len != n || !int_list(v[6]) || v[6]->list.len != n ||
        v[7]->kind != VK_INT || v[7]->i < 1 || v[8]->kind != VK_INT || v[8]->i < 1)
        return fl_ev_error(c, a->span, "recordio: 1 to %d fields, each a name, a dtype, a width, a rank and a LoD "
                           "level; threads and passes at least 1", FL_DS_MAX_FIELDS);
    FlDsLayout l = {.nfields = n};
    for (size_t i = 0; i < n; i++) {
        FlDType dt;
        if (!fl_dtype_from_name(v[2]->list.items[i]->str.s, &dt))
            return fl_ev_error(c, a->span, "recordio: dtype '%s'", v[2]->list.items[i]->str.s);
        l.fields[i] = (FlDsField){v[1]->list.items[i]->str.s, dt, (size_t)v[3]->list.items[i]->i,
                                  v[6]->list.items[i]->i == 1};
    }
    FlValue *rv = fl_ev_reader_source(c, "recordio", &l);
    FlValue *r = fl_ev_reader_record(rv);
    const char *attrs[7] = {"_files", "_slot_names", "_slot_types", "_slot_widths", "_shape_concat", "_ranks",
                            "_lod_levels"};
    for (int k = 0; k < 7; k++) { /* copies: later changes of the script's lists do not reach the reader */
        FlValue *copy = fl_v_list(c, VK_LIST);
        for (size_t i = 0; i < v[k]->list.len; i++) fl_v_list_push(c, copy, v[k]->list.items[i]);
        fl_v_rec_set(c, r, attrs[k], copy);
    }
    fl_v_rec_set(c, r, "_n", v[7]);
    fl_v_rec_set(c, r, "_pass_num", v[8]);
    return rv;
}

/* ------------------------------------------------------------------ DataFeedDesc's text format */

typedef struct Tok {
    const char *p, *end, *path;
    int line;
    FlErr *e;
} Tok;

static void skip_blank(Tok *t) {
    for (;;) {
        while (t->p < t->end && (*t->p == ' ' || *t->p == '\t' || *t->p == '\r' || *t->p == '\n')) {
            if (*t->p == '\n') t->line++;
            t->p++;
        }
        if (t->p < t->end && *t->p == '#') { /* a comment to the end of the line */
            while (t->p < t->end && *t->p != '\n') t->p++;
            continue;
        }
        return;
    }
}

static bool ident_char(char ch) {
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '_' ||
           ch == '-' || ch == '.' || ch == '+';
}

/* The next word (a field name, a number, true/false) into buf; false at anything else. */
static bool word(Tok *t, char *buf, size_t cap) {
    skip_blank(t);
    size_t n = 0;
    while (t->p < t->end && ident_char(*t->p) && n + 1 < cap) buf[n++] = *t->p++;
    buf[n] = '\0';
    return n > 0;
}

static bool punct(Tok *t, char ch) {
    skip_blank(t);
    if (t->p < t->end && *t->p == ch) {
        t->p++;
        return true;
    }
    return false;
}

static FlStatus bad(Tok *t, const char *what) {
    return fl_err(t->e, "%s:%d: DataFeedDesc: %s", t->path, t->line, what);
}

/* A quoted string value (protobuf's text format: "..." or '...', with \\ escapes of " ' \\ n t). */
static FlStatus quoted(Ctx *c, Tok *t, FlValue **out) {
    skip_blank(t);
    if (t->p >= t->end || (*t->p != '"' && *t->p != '\'')) return bad(t, "expected a quoted string");
    char q = *t->p++;
    FlBuf b = {0};
    while (t->p < t->end && *t->p != q && *t->p != '\n') {
        char ch = *t->p++;
        if (ch == '\\' && t->p < t->end) {
            ch = *t->p++;
            ch = ch == 'n' ? '\n' : ch == 't' ? '\t' : ch;
        }
        fl_buf_putc(&b, ch);
    }
    if (t->p >= t->end || *t->p != q) {
        fl_buf_free(&b);
        return bad(t, "a string without its closing quote");
    }
    t->p++;
    fl_buf_putc(&b, '\0');
    *out = fl_v_cstr(c, b.data);
    fl_buf_free(&b);
    return FL_OK;
}

static FlStatus int_value(Tok *t, int64_t *out) {
    char w[64], *end;
    if (!punct(t, ':') || !word(t, w, sizeof w)) return bad(t, "expected ': NUMBER'");
    long long x = strtoll(w, &end, 10);
    if (*end) return bad(t, "expected an integer");
    *out = x;
    return FL_OK;
}

static FlStatus bool_value(Tok *t, bool *out) {
    char w[16];
    if (!punct(t, ':') || !word(t, w, sizeof w)) return bad(t, "expected ': true' or ': false'");
    if (strcmp(w, "true") == 0 || strcmp(w, "1") == 0) *out = true;
    else if (strcmp(w, "false") == 0 || strcmp(w, "0") == 0) *out = false;
    else return bad(t, "expected true or false");
    return FL_OK;
}

/* slots { name: "..." type: "..." is_dense: B is_used: B shape: N ... }: a dict of the fields the
 * text sets (protobuf's presence: desc() prints those), shape a list. */
static FlStatus slot(Ctx *c, Tok *t, FlValue **out) {
    FlValue *d = fl_v_dict(c), *shape = NULL;
    char w[64];
    while (!punct(t, '}')) {
        if (!word(t, w, sizeof w)) return bad(t, "expected a field of slots or '}'");
        FlValue *s;
        int64_t n;
        bool b = false;
        if (strcmp(w, "name") == 0 || strcmp(w, "type") == 0) {
            if (!punct(t, ':') || quoted(c, t, &s)) return bad(t, "expected ': \"...\"'");
            fl_v_dict_set(c, d, fl_v_cstr(c, w), s);
        } else if (strcmp(w, "is_dense") == 0 || strcmp(w, "is_used") == 0) {
            if (bool_value(t, &b)) return FL_ERROR;
            fl_v_dict_set(c, d, fl_v_cstr(c, w), fl_v_bool(c, b));
        } else if (strcmp(w, "shape") == 0) {
            if (int_value(t, &n)) return FL_ERROR;
            if (!shape) {
                shape = fl_v_list(c, VK_LIST);
                fl_v_dict_set(c, d, fl_v_cstr(c, "shape"), shape);
            }
            fl_v_list_push(c, shape, fl_v_int(c, n));
        } else {
            char msg[128];
            snprintf(msg, sizeof msg, "slots has no field '%s' (name, type, is_dense, is_used, shape)", w);
            return bad(t, msg);
        }
    }
    *out = d;
    return FL_OK;
}

static FlStatus parse_desc(Ctx *c, Tok *t, FlValue *out) {
    FlValue *slots = fl_v_list(c, VK_LIST);
    fl_v_dict_set(c, out, fl_v_cstr(c, "slots"), slots);
    char w[64];
    for (;;) {
        skip_blank(t);
        if (t->p >= t->end) return FL_OK;
        if (!word(t, w, sizeof w)) return bad(t, "expected a field name");
        FlValue *s;
        int64_t n;
        if (strcmp(w, "name") == 0 || strcmp(w, "pipe_command") == 0) {
            if (!punct(t, ':') || quoted(c, t, &s)) return bad(t, "expected ': \"...\"'");
            fl_v_dict_set(c, out, fl_v_cstr(c, w), s);
        } else if (strcmp(w, "batch_size") == 0) {
            if (int_value(t, &n)) return FL_ERROR;
            fl_v_dict_set(c, out, fl_v_cstr(c, w), fl_v_int(c, n));
        } else if (strcmp(w, "multi_slot_desc") == 0) {
            punct(t, ':');
            if (!punct(t, '{')) return bad(t, "expected '{' after multi_slot_desc");
            while (!punct(t, '}')) {
                if (!word(t, w, sizeof w) || strcmp(w, "slots") != 0)
                    return bad(t, "multi_slot_desc holds slots { ... } only");
                punct(t, ':');
                if (!punct(t, '{')) return bad(t, "expected '{' after slots");
                if (slot(c, t, &s)) return FL_ERROR;
                fl_v_list_push(c, slots, s);
            }
        } else {
            char msg[160];
            snprintf(msg, sizeof msg, "no field '%s' (name, batch_size, pipe_command, multi_slot_desc)", w);
            return bad(t, msg);
        }
    }
}

static FlValue *d_feed_desc(Ctx *c, FlValue *self, CallArgs *a) {
    (void)self;
    ARGS("feed_desc", "path", 1);
    if (!fl_ev_want_str(c, v[0], "DataFeedDesc(proto_file)", a->span)) return c->error;
    FlErr e;
    size_t len;
    char *text = fl_read_regular_file(v[0]->str.s, &len, &e);
    if (!text) return fl_ev_error(c, a->span, "DataFeedDesc(proto_file): %s", e.msg);
    Tok t = {.p = text, .end = text + len, .path = v[0]->str.s, .line = 1, .e = &e};
    FlValue *out = fl_v_dict(c);
    FlStatus st = parse_desc(c, &t, out);
    free(text);
    if (st) return fl_ev_error(c, a->span, "%s", e.msg);
    return out;
}

static const NativeFn dataset_fns[] = {
    {"multislot", d_multislot},
    {"ctr", d_ctr},
    {"recordio", d_recordio},
    {"feed_desc", d_feed_desc},
};

void fl_ev_driver_dataset_install(Ctx *c) {
    fl_ev_module_of_fns(c, "_dataset", dataset_fns, FL_ARRAY_LEN(dataset_fns));
}
