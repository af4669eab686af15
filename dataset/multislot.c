/* multislot.c: Fluid's MultiSlot text files (dataset.h, fl_ds_multislot_load; docs/data.md,
 * "Fluid's Dataset: MultiSlot files"), as paddle/fluid/framework/data_feed.cc's MultiSlotDataFeed
 * reads them: one instance a line; for every slot of the description, in order, the number of its
 * values (at least 1) and then the values, uint64 ids (strtoull, base 10) or floats (strtof),
 * separated by blanks; nothing but blanks after the last slot. A used slot becomes a field of the
 * table: a sparse slot a sequence (width 1: the line's values are its steps), a dense slot a
 * plain field whose every line holds exactly `width` values; uint64 ids are int64 (Fluid's tensors
 * have no uint64), and one above 2^63 - 1 is an error, not a negative id. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dataset/dataset_impl.h"

FlStatus fl_ds_multislot_layout(const FlDsSlot *slots, size_t n, FlDsLayout *out, FlErr *e) {
    *out = (FlDsLayout){0};
    if (!n) return fl_err(e, "a MultiSlot dataset without slots (set_use_var)");
    for (size_t i = 0; i < n; i++) {
        if (slots[i].width < 0) continue;
        if (out->nfields == FL_DS_MAX_FIELDS)
            return fl_err(e, "a MultiSlot dataset of more than %d used slots", FL_DS_MAX_FIELDS);
        out->fields[out->nfields++] = (FlDsField){slots[i].name, slots[i].is_float ? FL_DT_FLOAT32 : FL_DT_INT64,
                                                  slots[i].width ? (size_t)slots[i].width : 1, slots[i].width == 0};
    }
    if (!out->nfields) return fl_err(e, "a MultiSlot dataset none of whose slots is used");
    return FL_OK;
}

static bool blank(char ch) { return ch == ' ' || ch == '\t' || ch == '\r' || ch == '\v' || ch == '\f'; }

static const char *skip(const char *p) {
    while (blank(*p)) p++;
    return p;
}

/* The token at p (for a message): up to the next blank, at most 24 bytes. */
static int tok_len(const char *p) {
    int n = 0;
    while (p[n] && !blank(p[n]) && n < 24) n++;
    return n;
}

/* Parses one line (NUL-terminated) into the columns. */
static FlStatus parse_line(const char *file, size_t lineno, const char *line, const FlDsSlot *slots, size_t n,
                           FlDsCol *cols, FlErr *e) {
    const char *p = line;
    size_t used = 0;
    for (size_t i = 0; i < n; i++) {
        const FlDsSlot *s = &slots[i];
        p = skip(p);
        if (!*p)
            return fl_err(e, "%s:%zu: the line ends before slot '%s' (slot %zu of %zu): each line holds every slot "
                          "of the dataset, in order", file, lineno, s->name, i + 1, n);
        char *end;
        errno = 0;
        long long num = *p == '-' || *p == '+' ? 0 : strtoll(p, &end, 10);
        if (*p == '-' || *p == '+' || end == p || (*end && !blank(*end)))
            return fl_err(e, "%s:%zu: slot '%s' (slot %zu of %zu): expected the number of its values, found '%.*s'",
                          file, lineno, s->name, i + 1, n, tok_len(p), p);
        if (num <= 0 || errno == ERANGE)
            return fl_err(e, "%s:%zu: slot '%s' (slot %zu of %zu) has %s values: a slot holds at least one (pad it, "
                          "as Fluid asks)", file, lineno, s->name, i + 1, n, num == 0 ? "0" : "a negative number of");
        if (s->width > 0 && num != s->width)
            return fl_err(e, "%s:%zu: dense slot '%s' (slot %zu of %zu) has %lld values; its var takes %lld a line",
                          file, lineno, s->name, i + 1, n, num, (long long)s->width);
        p = end;
        FlDsCol *c = s->width >= 0 ? &cols[used++] : NULL;
        for (long long j = 0; j < num; j++) {
            p = skip(p);
            if (!*p)
                return fl_err(e, "%s:%zu: slot '%s' (slot %zu of %zu) says %lld values but the line ends after %lld",
                              file, lineno, s->name, i + 1, n, num, j);
            errno = 0;
            if (s->is_float) {
                float v = strtof(p, &end);
                if (end == p || (*end && !blank(*end)))
                    return fl_err(e, "%s:%zu: slot '%s' (slot %zu of %zu), value %lld: '%.*s' is not a float", file,
                                  lineno, s->name, i + 1, n, j + 1, tok_len(p), p);
                if (c) FL_VEC_PUSH(&c->f, v);
            } else {
                unsigned long long v = *p == '-' || *p == '+' ? 0 : strtoull(p, &end, 10);
                if (*p == '-' || *p == '+' || end == p || (*end && !blank(*end)))
                    return fl_err(e, "%s:%zu: slot '%s' (slot %zu of %zu), value %lld: '%.*s' is not a uint64 id",
                                  file, lineno, s->name, i + 1, n, j + 1, tok_len(p), p);
                if (errno == ERANGE || v > (unsigned long long)INT64_MAX)
                    return fl_err(e, "%s:%zu: slot '%s' (slot %zu of %zu), value %lld: id %.*s does not fit the "
                                  "int64 tensors ids are fed as (at most 9223372036854775807)", file, lineno,
                                  s->name, i + 1, n, j + 1, tok_len(p), p);
                if (c) FL_VEC_PUSH(&c->u, (int64_t)v);
            }
            p = end;
        }
        if (c && s->width == 0) FL_VEC_PUSH(&c->off, (int64_t)(s->is_float ? c->f.len : c->u.len));
    }
    p = skip(p);
    if (*p)
        return fl_err(e, "%s:%zu: '%.*s' after the last slot: a line holds the %zu slots of the dataset and nothing "
                      "more", file, lineno, tok_len(p), p, n);
    return FL_OK;
}

FlStatus fl_ds_each_line(const char *file, char *text, size_t len, const char *what, FlDsLineFn fn, void *arg,
                         FlErr *e) {
    FlStatus st = FL_OK;
    size_t lineno = 0;
    for (char *p = text; st == FL_OK && p < text + len;) {
        char *nl = memchr(p, '\n', (size_t)(text + len - p));
        char *stop = nl ? nl : text + len;
        lineno++;
        if (memchr(p, '\0', (size_t)(stop - p)))
            st = fl_err(e, "%s:%zu: a NUL byte: %s is text", file, lineno, what);
        if (st == FL_OK) {
            char save = *stop; /* text has a NUL past its end */
            *stop = '\0';
            st = fn(arg, file, lineno, p, e);
            *stop = save;
        }
        p = stop + 1;
    }
    return st;
}

typedef struct Lines {
    const FlDsSlot *slots;
    size_t n;
    FlDsCol *cols;
    size_t *rows;
} Lines;

static FlStatus line_fn(void *arg, const char *file, size_t lineno, char *line, FlErr *e) {
    Lines *l = arg;
    if (parse_line(file, lineno, line, l->slots, l->n, l->cols, e)) return FL_ERROR;
    (*l->rows)++;
    return FL_OK;
}

static FlStatus read_file(const char *file, const FlDsSlot *slots, size_t n, FlDsCol *cols, size_t *rows, FlErr *e) {
    size_t len;
    FlErr why;
    char *text = fl_read_regular_file(file, &len, &why);
    if (!text) return fl_err(e, "a MultiSlot file of the dataset (set_filelist): %s", why.msg);
    Lines l = {slots, n, cols, rows};
    FlStatus st = fl_ds_each_line(file, text, len, "a MultiSlot file", line_fn, &l, e);
    free(text);
    return st;
}

FlDsTable *fl_ds_cols_table(const FlDsLayout *l, const FlDsCol *cols, size_t rows) {
    FlDsTable *t = fl_ds_table_new(l, rows);
    for (size_t f = 0; f < l->nfields; f++) {
        const FlDsField *fd = &l->fields[f];
        bool flt = fd->dtype == FL_DT_FLOAT32;
        size_t count = flt ? cols[f].f.len : cols[f].u.len;
        void *src = flt ? (void *)cols[f].f.data : (void *)cols[f].u.data;
        size_t esz = flt ? sizeof(float) : sizeof(int64_t);
        if (fd->seq) {
            memcpy(t->offsets[f], cols[f].off.data, (rows + 1) * sizeof(int64_t));
            t->data[f] = fl_xmalloc(fl_mul_size(count ? count : 1, esz));
        }
        if (count) memcpy(t->data[f], src, count * esz);
    }
    return t;
}

void fl_ds_cols_free(FlDsCol *cols, size_t n) {
    for (size_t f = 0; cols && f < n; f++) {
        FL_VEC_FREE(&cols[f].f);
        FL_VEC_FREE(&cols[f].u);
        FL_VEC_FREE(&cols[f].off);
    }
    free(cols);
}

FlStatus fl_ds_multislot_load(char *const *files, size_t nfiles, const FlDsSlot *slots, size_t n, FlDsTable **out,
                              FlErr *e) {
    FlDsLayout l;
    if (fl_ds_multislot_layout(slots, n, &l, e)) return FL_ERROR;
    FlDsCol *cols = fl_xcalloc(l.nfields, sizeof *cols);
    for (size_t f = 0; f < l.nfields; f++) FL_VEC_PUSH(&cols[f].off, 0);
    size_t rows = 0;
    FlStatus st = FL_OK;
    for (size_t k = 0; st == FL_OK && k < nfiles; k++) st = read_file(files[k], slots, n, cols, &rows, e);
    if (st == FL_OK) *out = fl_ds_cols_table(&l, cols, rows);
    fl_ds_cols_free(cols, l.nfields);
    return st;
}
