/* ctr.c: the files of Fluid's contrib.ctr_reader (dataset.h, fl_ds_ctr_load; docs/data.md,
 * "contrib.ctr_reader"), as its create_ctr_reader op reads them: plain or gzip text, one instance
 * a line, in one of two formats whose fields are separated by blanks:
 *   svm   two fields read past, the label (an integer; above 0 is a click, 1, else 0), then
 *         `feasign:slot` pairs; a pair of a slot the reader was not given is read past, and a
 *         slot a line gives no pair fills its sequence with the id 0
 *   csv   the label (an integer, as it is) in field 0, then fields of comma-separated values: a
 *         dense slot's floats (exactly its width) or a sparse slot's ids (one or more), each slot
 *         in the field its index names
 * The table has one field per slot of the description, in its order: the label an int64 of width
 * 1, a dense slot float32 of its width, a sparse slot an int64 sequence. `threads` threads parse
 * the files, each taking the next file of the list; the table holds the lines in the list's
 * order, whichever thread read them, and the first error in that order is the one reported. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "dataset/dataset_impl.h"

FlStatus fl_ds_ctr_layout(const FlDsCtr *d, FlDsLayout *out, FlErr *e) {
    *out = (FlDsLayout){0};
    if (!d->nslots) return fl_err(e, "a ctr_reader without slots");
    if (d->nslots > FL_DS_MAX_FIELDS) return fl_err(e, "a ctr_reader of more than %d vars", FL_DS_MAX_FIELDS);
    size_t labels = 0;
    for (size_t i = 0; i < d->nslots; i++) {
        const FlDsSlot *s = &d->slots[i];
        bool label = d->keys[i] == (d->csv ? 0 : -1);
        labels += label;
        if (label && (s->is_float || s->width != 1))
            return fl_err(e, "ctr_reader: the label '%s' is one int64 a line", s->name);
        if (!label && d->keys[i] < (d->csv ? 1 : 0))
            return fl_err(e, "ctr_reader: slot '%s' has %s %lld", s->name, d->csv ? "field" : "slot id",
                          (long long)d->keys[i]);
        if (!label && s->width < 0)
            return fl_err(e, "ctr_reader: slot '%s' of width %lld", s->name, (long long)s->width);
        if (!label && (s->width == 0) == s->is_float)
            return fl_err(e, "ctr_reader: slot '%s': a sparse slot holds ids, a dense one floats", s->name);
        if (!d->csv && !label && s->width)
            return fl_err(e, "ctr_reader: slot '%s': an svm line has sparse slots only", s->name);
        out->fields[out->nfields++] = (FlDsField){s->name, s->is_float ? FL_DT_FLOAT32 : FL_DT_INT64,
                                                  s->width ? (size_t)s->width : 1, s->width == 0};
    }
    if (labels != 1) return fl_err(e, "ctr_reader: %zu labels among the slots (one)", labels);
    return FL_OK;
}

/* One file's lines, parsed by one thread. */
typedef struct Part {
    FlDsCol *cols;
    size_t rows;
    FlStatus st;
    FlErr e;
} Part;

typedef struct Job {
    const FlDsCtr *d;
    Part *parts;
} Job;

/* The token at p (for a message): at most 24 bytes of it. */
static int shown(size_t len) { return len > 24 ? 24 : (int)len; }

/* [p, p+len) as a C string in buf (64 bytes); false when empty or longer than any number. */
static bool cstr(const char *p, size_t len, char *buf) {
    if (!len || len >= 64) return false;
    memcpy(buf, p, len);
    buf[len] = '\0';
    return true;
}

/* Whether [p, p+len) is a whole int64 in base 10; *v its value. */
static bool int64_of(const char *p, size_t len, int64_t *v) {
    char buf[64], *end;
    if (!cstr(p, len, buf)) return false;
    errno = 0;
    long long x = strtoll(buf, &end, 10);
    *v = (int64_t)x;
    return !*end && errno != ERANGE;
}

/* Whether [p, p+len) is a whole float; *v its value. */
static bool float_of(const char *p, size_t len, float *v) {
    char buf[64], *end;
    if (!cstr(p, len, buf)) return false;
    *v = strtof(buf, &end);
    return !*end;
}

typedef struct Line {
    const FlDsCtr *d;
    FlDsCol *cols;
    size_t *rows;
    FL_VEC(const char *) toks; /* the line's fields and their lengths */
    FL_VEC(size_t) lens;
    FL_VEC(int64_t) * ids; /* svm: one line's ids of each slot */
} Line;

static size_t split(Line *l, const char *line) {
    const char *p = line, *end = line + strlen(line), *t;
    size_t len;
    l->toks.len = l->lens.len = 0;
    while ((t = fl_ds_token(&p, end, &len))) {
        FL_VEC_PUSH(&l->toks, t);
        FL_VEC_PUSH(&l->lens, len);
    }
    return l->toks.len;
}

/* A csv line: the label, then each slot's comma-separated values in its field. */
static FlStatus csv_line(Line *l, const char *file, size_t lineno, size_t ntok, FlErr *e) {
    const FlDsCtr *d = l->d;
    for (size_t i = 0; i < d->nslots; i++) {
        const FlDsSlot *s = &d->slots[i];
        size_t k = (size_t)d->keys[i];
        const char *what = k == 0 ? "the label" : s->width ? "dense slot" : "sparse slot";
        if (k >= ntok)
            return fl_err(e, "%s:%zu: %s '%s' is field %zu of a line, but the line has %zu fields", file, lineno, what,
                          s->name, k, ntok);
        FlDsCol *c = &l->cols[i];
        if (k == 0) {
            int64_t v;
            if (!int64_of(l->toks.data[0], l->lens.data[0], &v))
                return fl_err(e, "%s:%zu: the label '%s' (field 0): '%.*s' is not an integer", file, lineno, s->name,
                              shown(l->lens.data[0]), l->toks.data[0]);
            FL_VEC_PUSH(&c->u, v);
            continue;
        }
        const char *p = l->toks.data[k], *end = p + l->lens.data[k];
        int64_t count = 0;
        for (;;) {
            const char *comma = memchr(p, ',', (size_t)(end - p));
            const char *stop = comma ? comma : end;
            size_t len = (size_t)(stop - p);
            count++;
            if (s->width) {
                float v;
                if (!float_of(p, len, &v))
                    return fl_err(e, "%s:%zu: dense slot '%s' (field %zu), value %lld: '%.*s' is not a float", file,
                                  lineno, s->name, k, (long long)count, shown(len), p);
                if (count <= s->width) FL_VEC_PUSH(&c->f, v);
            } else {
                int64_t v;
                if (!int64_of(p, len, &v))
                    return fl_err(e, "%s:%zu: sparse slot '%s' (field %zu), value %lld: '%.*s' is not an int64 id",
                                  file, lineno, s->name, k, (long long)count, shown(len), p);
                FL_VEC_PUSH(&c->u, v);
            }
            if (!comma) break;
            p = comma + 1;
        }
        if (s->width && count != s->width)
            return fl_err(e, "%s:%zu: dense slot '%s' (field %zu) has %lld values; its var takes %lld a line", file,
                          lineno, s->name, k, (long long)count, (long long)s->width);
        if (!s->width) FL_VEC_PUSH(&c->off, (int64_t)c->u.len);
    }
    return FL_OK;
}

/* An svm line: two fields read past, the label, then feasign:slot pairs. */
static FlStatus svm_line(Line *l, const char *file, size_t lineno, size_t ntok, FlErr *e) {
    const FlDsCtr *d = l->d;
    if (ntok < 3)
        return fl_err(e, "%s:%zu: an svm line holds two fields read past, the label, then feasign:slot pairs; this "
                      "one has %zu field%s", file, lineno, ntok, ntok == 1 ? "" : "s");
    int64_t label;
    size_t li = 0;
    while (d->keys[li] != -1) li++; /* fl_ds_ctr_layout: one label */
    if (!int64_of(l->toks.data[2], l->lens.data[2], &label))
        return fl_err(e, "%s:%zu: the label '%s' (field 2): '%.*s' is not an integer", file, lineno,
                      d->slots[li].name, shown(l->lens.data[2]), l->toks.data[2]);
    for (size_t i = 0; i < d->nslots; i++) l->ids[i].len = 0;
    for (size_t j = 3; j < ntok; j++) {
        const char *colon = memchr(l->toks.data[j], ':', l->lens.data[j]);
        int64_t id, slot;
        if (!colon)
            return fl_err(e, "%s:%zu: field %zu: '%.*s' is not a feasign:slot pair", file, lineno, j,
                          shown(l->lens.data[j]), l->toks.data[j]);
        size_t a = (size_t)(colon - l->toks.data[j]), b = l->lens.data[j] - a - 1;
        if (!int64_of(colon + 1, b, &slot))
            return fl_err(e, "%s:%zu: field %zu: slot '%.*s' of pair '%.*s' is not an integer slot id", file, lineno,
                          j, shown(b), colon + 1, shown(l->lens.data[j]), l->toks.data[j]);
        size_t i = 0;
        while (i < d->nslots && (d->keys[i] != slot || i == li)) i++;
        if (i == d->nslots) continue; /* a slot the reader was not given: read past, as Fluid's */
        if (!int64_of(l->toks.data[j], a, &id))
            return fl_err(e, "%s:%zu: slot %lld ('%s'), field %zu: feasign '%.*s' is not an int64 id", file, lineno,
                          (long long)slot, d->slots[i].name, j, shown(a), l->toks.data[j]);
        FL_VEC_PUSH(&l->ids[i], id);
    }
    for (size_t i = 0; i < d->nslots; i++) {
        FlDsCol *c = &l->cols[i];
        if (i == li) {
            FL_VEC_PUSH(&c->u, label > 0 ? 1 : 0);
            continue;
        }
        if (!l->ids[i].len) FL_VEC_PUSH(&c->u, 0); /* no pair of this slot: the id 0, as Fluid fills it */
        for (size_t k = 0; k < l->ids[i].len; k++) FL_VEC_PUSH(&c->u, l->ids[i].data[k]);
        FL_VEC_PUSH(&c->off, (int64_t)c->u.len);
    }
    return FL_OK;
}

static FlStatus line_fn(void *arg, const char *file, size_t lineno, char *line, FlErr *e) {
    Line *l = arg;
    size_t ntok = split(l, line);
    if (!ntok) return fl_err(e, "%s:%zu: an empty line: each line is an instance", file, lineno);
    if ((l->d->csv ? csv_line : svm_line)(l, file, lineno, ntok, e)) return FL_ERROR;
    (*l->rows)++;
    return FL_OK;
}

/* The bytes of a gzip file (a plain one reads as it is, as zlib reads it). */
static char *read_gzip(const char *file, size_t *len, FlErr *e) {
    FILE *f = fl_open_regular(file, e);
    if (!f) return NULL;
    int fd = dup(fileno(f));
    fclose(f);
    gzFile z = fd < 0 ? NULL : gzdopen(fd, "rb");
    if (!z) {
        if (fd >= 0) close(fd);
        fl_err(e, "cannot read '%s' as gzip", file);
        return NULL;
    }
    char *text;
    return fl_ds_gz_read_all(z, file, &text, len, e) ? NULL : text;
}

static void read_part(const FlDsCtr *d, const char *file, Part *p) {
    p->cols = fl_xcalloc(d->nslots, sizeof *p->cols);
    for (size_t i = 0; i < d->nslots; i++) FL_VEC_PUSH(&p->cols[i].off, 0);
    size_t len = 0;
    FlErr why;
    char *text = d->gzip ? read_gzip(file, &len, &why) : fl_read_regular_file(file, &len, &why);
    if (!text) {
        p->st = fl_err(&p->e, "a file of the ctr_reader (file_list): %s", why.msg);
        return;
    }
    Line *l = fl_xcalloc(1, sizeof *l);
    l->d = d;
    l->cols = p->cols;
    l->rows = &p->rows;
    l->ids = fl_xcalloc(d->nslots, sizeof *l->ids);
    p->st = fl_ds_each_line(file, text, len, "a ctr_reader file", line_fn, l, &p->e);
    for (size_t i = 0; i < d->nslots; i++) FL_VEC_FREE(&l->ids[i]);
    FL_VEC_FREE(&l->toks);
    FL_VEC_FREE(&l->lens);
    free(l->ids);
    free(l);
    free(text);
}

static void read_file_k(void *arg, size_t k) {
    Job *j = arg;
    read_part(j->d, j->d->files[k], &j->parts[k]);
}

/* Appends column b of `rows` lines to a. */
static void append(FlDsCol *a, const FlDsCol *b, size_t rows) {
    int64_t base = a->off.len ? a->off.data[a->off.len - 1] : 0;
    for (size_t k = 0; k < b->f.len; k++) FL_VEC_PUSH(&a->f, b->f.data[k]);
    for (size_t k = 0; k < b->u.len; k++) FL_VEC_PUSH(&a->u, b->u.data[k]);
    for (size_t k = 1; k < b->off.len && k <= rows; k++) FL_VEC_PUSH(&a->off, base + b->off.data[k]);
}

FlStatus fl_ds_ctr_load(const FlDsCtr *d, FlDsTable **out, FlErr *e) {
    FlDsLayout lay;
    if (fl_ds_ctr_layout(d, &lay, e)) return FL_ERROR;
    if (!d->nfiles) return fl_err(e, "a ctr_reader without files (file_list)");
    if (d->threads < 1) return fl_err(e, "a ctr_reader of %zu read threads", d->threads);
    Job j = {d, fl_xcalloc(d->nfiles, sizeof(Part))};
    fl_ds_read_files(d->nfiles, d->threads, read_file_k, &j);
    FlStatus st = FL_OK;
    for (size_t k = 0; k < d->nfiles && st == FL_OK; k++)
        if (j.parts[k].st) st = fl_err(e, "%s", j.parts[k].e.msg);
    if (st == FL_OK) {
        FlDsCol *cols = fl_xcalloc(d->nslots, sizeof *cols);
        size_t rows = 0;
        for (size_t i = 0; i < d->nslots; i++) FL_VEC_PUSH(&cols[i].off, 0);
        for (size_t k = 0; k < d->nfiles; k++) {
            for (size_t i = 0; i < d->nslots; i++) append(&cols[i], &j.parts[k].cols[i], j.parts[k].rows);
            rows += j.parts[k].rows;
        }
        *out = fl_ds_cols_table(&lay, cols, rows);
        fl_ds_cols_free(cols, d->nslots);
    }
    for (size_t k = 0; k < d->nfiles; k++) fl_ds_cols_free(j.parts[k].cols, d->nslots);
    free(j.parts);
    return st;
}
