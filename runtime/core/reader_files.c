/* reader_files.c: open_files' table from its RecordIO files (reader_files.h says what it holds).
 *
 * Each file is read whole and scanned in memory into a Part (per field its bytes, its records'
 * row offsets and sequence ends); threads take files in turn, and the parts are joined in the
 * files' order, so the table never depends on which thread read what.
 */
#include <stdlib.h>
#include <string.h>

#include "runtime/core/reader_files.h"
#include "runtime/lodstream.h"
#include "runtime/recordio.h"

typedef FL_VEC(int64_t) I64Vec;

typedef struct Col {
    FlBuf bytes;
    I64Vec off;     /* the records' first rows, then the rows in all (records + 1) */
    I64Vec seq_at;  /* LoD level 1: the records' first sequences, then the sequences (records + 1) */
    I64Vec seq_end; /* LoD level 1: each sequence's end (in rows of the field) */
} Col;

typedef struct Part {
    Col cols[FL_DS_MAX_FIELDS];
    size_t records;
    FlStatus st;
    FlErr e;
} Part;

typedef struct Decl {
    size_t n;
    FlDType dtype[FL_DS_MAX_FIELDS];
    int rank[FL_DS_MAX_FIELDS];
    const int64_t *dims[FL_DS_MAX_FIELDS];
    int lod[FL_DS_MAX_FIELDS];
} Decl;

typedef struct Job {
    const FlReaderDesc *d;
    const Decl *decl;
    Part *parts;
} Job;

static void col_init(Col *c, int lod) {
    FL_VEC_PUSH(&c->off, 0);
    if (lod) FL_VEC_PUSH(&c->seq_at, 0);
}

static void col_fini(Col *c) {
    fl_buf_free(&c->bytes);
    FL_VEC_FREE(&c->off);
    FL_VEC_FREE(&c->seq_at);
    FL_VEC_FREE(&c->seq_end);
}

/* Whether tensor lt is field f as declared; else the message in e. */
static FlStatus check_field(const Decl *dc, size_t f, const FlLodTensor *lt, FlErr *e) {
    const FlTensor *t = &lt->t;
    if (t->dtype != dc->dtype[f])
        return fl_err(e, "field %zu holds %s values, but open_files(dtypes=...) declares %s", f, fl_dtype_name(t->dtype),
                      fl_dtype_name(dc->dtype[f]));
    bool fits = t->ndim == dc->rank[f];
    for (int k = 0; fits && k < t->ndim; k++) fits = dc->dims[f][k] < 0 || dc->dims[f][k] == t->ne[k];
    if (!fits) {
        FlShapeStr a = fl_tensor_shape(t), b = fl_shape_str(dc->rank[f], dc->dims[f]);
        return fl_err(e, "field %zu has shape %s, but open_files(shapes=...) declares %s", f, a.s, b.s);
    }
    if (lt->nlevels != dc->lod[f])
        return fl_err(e, "field %zu has %d LoD levels, but open_files(lod_levels=...) declares %d", f, lt->nlevels,
                      dc->lod[f]);
    return FL_OK;
}

/* Appends record rec (len bytes at byte `at` of its file) to p: its tensors, checked. */
static FlStatus add_record(const Decl *dc, Part *p, const unsigned char *rec, size_t len, size_t at, FlErr *e) {
    size_t pos = 0;
    for (size_t f = 0; f < dc->n; f++) {
        if (pos == len) return fl_err(e, "it holds %zu tensors, and open_files declares %zu fields", f, dc->n);
        FlLodTensor lt;
        fl_lodtensor_init(&lt);
        size_t used = 0;
        FlStatus st = fl_lodstream_read(e, rec + pos, len - pos, at + 4 + pos, &used, &lt);
        if (st == FL_OK) st = check_field(dc, f, &lt, e);
        if (st == FL_OK) {
            Col *c = &p->cols[f];
            size_t bytes = (size_t)fl_tensor_numel(&lt.t) * fl_dtype_size(lt.t.dtype);
            int64_t base = c->off.data[c->off.len - 1];
            if (bytes) fl_buf_append(&c->bytes, fl_tensor_data(&lt.t), bytes);
            FL_VEC_PUSH(&c->off, base + lt.t.ne[0]);
            if (dc->lod[f]) {
                const int64_t *o = fl_tensor_data(&lt.lod[0]);
                int64_t no = fl_tensor_numel(&lt.lod[0]);
                for (int64_t k = 1; k < no; k++) FL_VEC_PUSH(&c->seq_end, base + o[k]);
                FL_VEC_PUSH(&c->seq_at, (int64_t)c->seq_end.len);
            }
        }
        fl_lodtensor_fini(&lt);
        if (st) return st;
        pos += used;
    }
    if (pos != len)
        return fl_err(e, "it holds %zu bytes after its %zu tensors (open_files declares %zu fields)", len - pos, dc->n,
                      dc->n);
    return FL_OK;
}

/* File `path`'s part from its bytes. */
static void parse_part(const Decl *dc, const char *path, const void *bytes, size_t len, Part *p) {
    FlErr why;
    FlRecordioScanner s;
    fl_recordio_scanner_init(&s, bytes, len);
    for (;;) {
        const unsigned char *rec;
        size_t rl, at;
        bool ok;
        if (fl_recordio_next(&why, &s, &rec, &rl, &at, &ok)) {
            p->st = fl_err(&p->e, "'%s', a file of open_files, after record %zu: %s", path, p->records, why.msg);
            break;
        }
        if (!ok) break;
        if (add_record(dc, p, rec, rl, at, &why)) {
            p->st = fl_err(&p->e, "'%s', a file of open_files, record %zu (at byte %zu): %s", path, p->records, at,
                           why.msg);
            break;
        }
        p->records++;
    }
    fl_recordio_scanner_fini(&s);
}

static void read_part(const Decl *dc, const char *path, Part *p) {
    for (size_t f = 0; f < dc->n; f++) col_init(&p->cols[f], dc->lod[f]);
    size_t len = 0;
    FlErr why;
    char *bytes = fl_read_regular_file(path, &len, &why);
    if (!bytes) {
        p->st = fl_err(&p->e, "a file of open_files: %s", why.msg);
        return;
    }
    parse_part(dc, path, bytes, len, p);
    free(bytes);
}

static void read_file_k(void *arg, size_t k) {
    Job *j = arg;
    read_part(j->decl, j->d->files.data[k], &j->parts[k]);
}

/* The declaration of node d (flc verify checked its lists agree). */
static FlStatus declare(const FlReaderDesc *d, Decl *dc, FlDsLayout *l, FlErr *e) {
    dc->n = d->slot_names.len;
    if (dc->n > FL_DS_MAX_FIELDS) return fl_err(e, "open_files of %zu fields (at most %d)", dc->n, FL_DS_MAX_FIELDS);
    l->nfields = dc->n;
    size_t at = 0;
    for (size_t f = 0; f < dc->n; f++) {
        if (!fl_dtype_from_name(d->slot_types.data[f], &dc->dtype[f]))
            return fl_err(e, "open_files: field %zu of dtype '%s'", f, d->slot_types.data[f]);
        dc->rank[f] = (int)d->ranks.data[f];
        dc->dims[f] = d->shape_concat.data + at;
        dc->lod[f] = (int)d->lod_levels.data[f];
        at += (size_t)d->ranks.data[f];
        l->fields[f] = (FlDsField){d->slot_names.data[f], dc->dtype[f], (size_t)d->slot_widths.data[f], dc->lod[f] == 1};
    }
    return FL_OK;
}

/* Moves vector src (shifted by `by`, its first entry dropped when `skip_first`) onto dst. */
static void join_vec(I64Vec *dst, const I64Vec *src, int64_t by, bool skip_first) {
    for (size_t k = skip_first ? 1 : 0; k < src->len; k++) FL_VEC_PUSH(dst, by + src->data[k]);
}

static void *take_vec(I64Vec *v) {
    void *p = v->data;
    v->data = NULL;
    v->len = v->cap = 0;
    return p;
}

/* The table of the parts of nfiles files (freed here), or the first part's error in file order. */
static FlStatus join_parts(const Decl *dc, const FlDsLayout *lay, Part *parts, size_t nfiles, FlDsTable **out,
                           FlErr *e) {
    FlStatus st = FL_OK;
    for (size_t k = 0; k < nfiles && st == FL_OK; k++)
        if (parts[k].st) st = fl_err(e, "%s", parts[k].e.msg);
    if (st == FL_OK) {
        FlDsTable *t = fl_xcalloc(1, sizeof *t);
        t->layout = *lay;
        t->records = true;
        for (size_t f = 0; f < dc->n; f++) {
            Col all = {0};
            col_init(&all, dc->lod[f]);
            for (size_t k = 0; k < nfiles; k++) {
                Col *c = &parts[k].cols[f];
                int64_t rows = all.off.data[all.off.len - 1], seqs = (int64_t)all.seq_end.len;
                fl_buf_append(&all.bytes, c->bytes.data, c->bytes.len);
                join_vec(&all.off, &c->off, rows, true);
                join_vec(&all.seq_at, &c->seq_at, seqs, true);
                join_vec(&all.seq_end, &c->seq_end, rows, false);
            }
            t->data[f] = all.bytes.data ? all.bytes.data : fl_xcalloc(1, 1);
            all.bytes.data = NULL;
            t->offsets[f] = take_vec(&all.off);
            if (dc->lod[f]) {
                t->seq_at[f] = take_vec(&all.seq_at);
                t->seq_end[f] = all.seq_end.data ? take_vec(&all.seq_end) : fl_xcalloc(1, sizeof(int64_t));
            }
            col_fini(&all);
        }
        for (size_t k = 0; k < nfiles; k++) t->rows += parts[k].records;
        *out = t;
    }
    for (size_t k = 0; k < nfiles; k++)
        for (size_t f = 0; f < dc->n; f++) col_fini(&parts[k].cols[f]);
    free(parts);
    return st;
}

FlStatus fl_reader_files_load(const FlReaderDesc *d, FlDsTable **out, FlErr *e) {
    *out = NULL;
    Decl dc = {0};
    FlDsLayout lay = {0};
    if (declare(d, &dc, &lay, e)) return FL_ERROR;
    size_t want = d->n > 0 ? (size_t)d->n : 1;
    Job j = {d, &dc, fl_xcalloc(d->files.len + 1, sizeof(Part))};
    fl_ds_read_files(d->files.len, want, read_file_k, &j);
    return join_parts(&dc, &lay, j.parts, d->files.len, out, e);
}

FlStatus fl_reader_files_parse(const FlReaderDesc *d, const void *bytes, size_t len, FlDsTable **out, FlErr *e) {
    *out = NULL;
    Decl dc = {0};
    FlDsLayout lay = {0};
    if (declare(d, &dc, &lay, e)) return FL_ERROR;
    Part *p = fl_xcalloc(1, sizeof(Part));
    for (size_t f = 0; f < dc.n; f++) col_init(&p->cols[f], dc.lod[f]);
    parse_part(&dc, d->files.len ? d->files.data[0] : "", bytes, len, p);
    return join_parts(&dc, &lay, p, 1, out, e);
}
