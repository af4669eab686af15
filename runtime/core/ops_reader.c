/* ops_reader.c: the adapters of the driver's reader ops (compiler/ops/reader.def; docs/driver.md,
 * "Data") over dataset/, on the driver host of driver.h (the bundle's readers, the run's seed).
 *
 *   reader_open   Out = a Reader: the tables of the sources under reader `reader` of
 *                 Bundle.readers (paddle.dataset modules, MultiSlot, ctr_reader and open_files'
 *                 RecordIO files: reader_files.c), read once
 *   reader_epoch  Out = an Epoch: the samples the reader's nodes give, in order (a sample is one
 *                 row of each source a compose joins), and its batch size
 *   reader_next   the next batch: one tensor [rows, width] per field (a sequence field: its steps
 *                 [steps, width] and their offsets [rows + 1]), Rows, Ok
 *   recordio_write the batches left in an Epoch written to a RecordIO file, a record each
 *                 (fluid.recordio_writer), each field cast and shaped as declared
 *
 * An epoch is computed whole when it starts (a list of row references, no copy of the data), so
 * Paddle's decorators are list operations: shuffle(buf) shuffles each run of buf samples (Paddle's
 * buffer fills with buf samples, is shuffled and emptied), firstn keeps the first n samples (or
 * batches, after a batch), chain concatenates, compose zips (check_alignment: the inputs must end
 * together), buffered changes nothing but when samples are read, batch cuts the list. Over a
 * reader of batches (layers.shuffle and layers.batch of a py_reader, or of layers.batch), Fluid's
 * decorators take a batch as their item: shuffle_batches shuffles each run of n batches,
 * concat_batches joins each n batches into one (a last run of fewer dropped). The
 * shuffles draw from one generator seeded with the run's seed and the reader's count of epochs,
 * nodes in the order of Bundle.readers. An open_files source gives its records pass_num times
 * over; a record is a batch of its own, so a batch of records is their rows one after the other
 * (next_records), as Fluid's batch reader concatenates them.
 *
 * A Reader is shared by the epochs made from it (a reference count): a later reader_open of the
 * same var replaces it while an epoch still reads it.
 */
#include <stdlib.h>
#include <string.h>

#include "dataset/dataset.h"
#include "runtime/core/driver.h"
#include "runtime/core/exec_impl.h"
#include "runtime/core/reader_files.h"
#include "runtime/lodstream.h"
#include "runtime/recordio.h"
#include "runtime/rng.h"

/* A sample's row of one source. */
typedef struct Ref {
    const FlDsTable *t;
    size_t row;
} Ref;

typedef struct Reader {
    int refs;
    const FlBundle *b;   /* borrowed: outlives the driver's run */
    size_t root;
    FlDsTable **tables;  /* per node of b->readers: the table of a dataset node under root, else NULL */
    uint64_t seed, epochs;
} Reader;

/* The samples of a node in one epoch: n samples of w refs each; batch > 0 once batched. The batches
 * are the cuts of `batch` samples (a last short one dropped when drop_last) until a decorator of
 * batches (concat_batches, shuffle_batches) makes them explicit: then batch i is the samples
 * [starts[i], starts[i + 1]) of nbatches, and n is starts[nbatches]. */
typedef struct Samples {
    Ref *refs;
    size_t n, w, batch, max_batches;
    bool drop_last, limited; /* limited: a firstn after the batch keeps max_batches batches */
    size_t *starts, nbatches;
} Samples;

static void samples_free(Samples *s) {
    free(s->refs);
    free(s->starts);
    *s = (Samples){0};
}

typedef struct Epoch {
    Reader *r;
    Samples s;
    size_t batches, next;
} Epoch;

static void reader_release(void *p) {
    Reader *r = p;
    if (__atomic_sub_fetch(&r->refs, 1, __ATOMIC_ACQ_REL) != 0) return;
    for (size_t i = 0; i < r->b->readers.len; i++) fl_ds_free(r->tables[i]);
    free(r->tables);
    free(r);
}

static void reader_retain(void *p) { __atomic_add_fetch(&((Reader *)p)->refs, 1, __ATOMIC_ACQ_REL); }

static void epoch_release(void *p) {
    Epoch *ep = p;
    reader_release(ep->r);
    samples_free(&ep->s);
    free(ep);
}

/* ---------------------------------------------------------------- reader_open */

/* Whether node d is a source: a paddle.dataset reader, a MultiSlot dataset or a ctr_reader's
 * files, a table of samples. */
static bool is_source(const FlReaderDesc *d) {
    return strcmp(d->kind, "dataset") == 0 || strcmp(d->kind, "multislot") == 0 || strcmp(d->kind, "ctr") == 0 ||
           strcmp(d->kind, "recordio") == 0;
}

/* A MultiSlot dataset's table (Fluid's Dataset API, docs/data.md): its files read now. */
/* The slots of a MultiSlot or ctr reader (malloc'd; the names borrowed from d). */
static FlDsSlot *slots_of(const FlReaderDesc *d) {
    size_t n = d->slot_names.len;
    FlDsSlot *slots = fl_xcalloc(n + 1, sizeof *slots);
    for (size_t k = 0; k < n; k++) /* flc verify checked the lists have n entries */
        slots[k] = (FlDsSlot){d->slot_names.data[k], strcmp(d->slot_types.data[k], "float") == 0,
                              d->slot_widths.data[k]};
    return slots;
}

static FlStatus load_multislot(const FlReaderDesc *d, FlDsTable **out, FlErr *e) {
    size_t n = d->slot_names.len;
    FlDsSlot *slots = slots_of(d);
    FlStatus st = fl_ds_multislot_load(d->files.data, d->files.len, slots, n, out, e);
    free(slots);
    return st;
}

/* A ctr_reader's table (fluid.contrib.ctr_reader, docs/data.md): its files read now, by its
 * read threads. */
static FlStatus load_ctr(const FlReaderDesc *d, FlDsTable **out, FlErr *e) {
    size_t n = d->slot_names.len;
    FlDsSlot *slots = slots_of(d);
    FlDsCtr c = {strcmp(d->line_format, "csv") == 0, d->gzip, (size_t)d->n, d->files.data, d->files.len, slots,
                 d->slot_keys.data, n};
    FlStatus st = fl_ds_ctr_load(&c, out, e);
    free(slots);
    return st;
}

/* Reads the tables of the source nodes under node i. */
static FlStatus load(Reader *r, size_t i, FlErr *e) {
    const FlReaderDesc *d = r->b->readers.data[i];
    if (strcmp(d->kind, "multislot") == 0) return r->tables[i] ? FL_OK : load_multislot(d, &r->tables[i], e);
    if (strcmp(d->kind, "ctr") == 0) return r->tables[i] ? FL_OK : load_ctr(d, &r->tables[i], e);
    if (strcmp(d->kind, "recordio") == 0) return r->tables[i] ? FL_OK : fl_reader_files_load(d, &r->tables[i], e);
    if (strcmp(d->kind, "dataset") == 0) {
        if (r->tables[i]) return FL_OK;
        FlDsArgs a = {.has_dict = d->words.len > 0, .nwords = d->words.len, .words = d->words.data,
                      .ids = d->word_ids.data, .n = d->n, .data_type = d->data_type,
                      .n2 = d->n2, .lang = d->lang};
        return fl_ds_load(d->dataset, d->part, &a, &r->tables[i], e);
    }
    for (size_t k = 0; k < d->inputs.len; k++)
        if (load(r, (size_t)d->inputs.data[k], e)) return FL_ERROR;
    return FL_OK;
}

static FlStatus run_reader_open(RunCtx *rc, const ExecOp *op, FlScope *s) {
    const FlDriverHost *h = fl_driver_find(s);
    if (!h || !h->bundle) return fl_exec_op_error(rc, op, "a reader op runs only in a bundle's driver");
    int64_t idx = fl_exec_attr_int(op, "reader");
    if (idx < 0 || (size_t)idx >= h->bundle->readers.len)
        return fl_exec_op_error(rc, op, "reader %lld is not a reader of the bundle (it has %zu)", (long long)idx,
                                h->bundle->readers.len);
    Reader *r = fl_xcalloc(1, sizeof *r);
    r->refs = 1;
    r->b = h->bundle;
    r->root = (size_t)idx;
    r->seed = h->seed;
    r->tables = fl_xcalloc(h->bundle->readers.len + 1, sizeof *r->tables);
    FlErr e;
    if (load(r, r->root, &e)) {
        reader_release(r);
        return fl_exec_op_error(rc, op, "%s", e.msg);
    }
    fl_var_set_object(fl_exec_var_write(s, fl_exec_out_args(op, FL_OUT_reader_open_Out)), r, reader_release);
    return FL_OK;
}
FL_CONTROL_ADAPTER(reader_open, NULL, run_reader_open);

/* ---------------------------------------------------------------- reader_epoch */

static FlStatus samples(Reader *r, size_t i, FlRng *rng, Samples *out, FlErr *e);

/* Whether the field layouts of two sources are the same (chain joins only those). */
static bool same_layout(const FlDsLayout *a, const FlDsLayout *b) {
    if (a->nfields != b->nfields) return false;
    for (size_t f = 0; f < a->nfields; f++)
        if (a->fields[f].dtype != b->fields[f].dtype || a->fields[f].width != b->fields[f].width ||
            a->fields[f].seq != b->fields[f].seq)
            return false;
    return true;
}

static FlStatus join(Reader *r, const FlReaderDesc *d, FlRng *rng, Samples *out, FlErr *e) {
    bool compose = strcmp(d->kind, "compose") == 0;
    size_t k = d->inputs.len;
    Samples *in = fl_xcalloc(k, sizeof *in);
    FlStatus st = FL_OK;
    size_t total = 0, w = 0, n = SIZE_MAX;
    for (size_t j = 0; j < k && st == FL_OK; j++) {
        st = samples(r, (size_t)d->inputs.data[j], rng, &in[j], e);
        if (st == FL_OK && in[j].batch) st = fl_err(e, "%s: reader %d is batched: %s joins readers of samples", d->kind,
                                                    (int)d->inputs.data[j], d->kind);
        if (st) break;
        total += in[j].n;
        w += in[j].w;
        n = in[j].n < n ? in[j].n : n;
        if (!compose && j && (in[j].w != in[0].w ||
                              (in[j].n && in[0].n && !same_layout(&in[j].refs[0].t->layout, &in[0].refs[0].t->layout))))
            st = fl_err(e, "chain: reader %d gives samples of other fields than reader %d", (int)d->inputs.data[j],
                        (int)d->inputs.data[0]);
        if (compose && d->check_alignment && in[j].n != in[0].n)
            st = fl_err(e, "compose: reader %d gives %zu samples but reader %d %zu (ComposeNotAligned; "
                        "check_alignment=False stops at the shortest)", (int)d->inputs.data[j], in[j].n,
                        (int)d->inputs.data[0], in[0].n);
    }
    if (st == FL_OK && compose) {
        *out = (Samples){.refs = fl_xcalloc(n * w + 1, sizeof(Ref)), .n = n, .w = w};
        for (size_t i = 0; i < n; i++)
            for (size_t j = 0, o = 0; j < k; o += in[j].w, j++)
                memcpy(&out->refs[i * w + o], &in[j].refs[i * in[j].w], in[j].w * sizeof(Ref));
    } else if (st == FL_OK) {
        w = in[0].w;
        *out = (Samples){.refs = fl_xcalloc(total * w + 1, sizeof(Ref)), .n = total, .w = w};
        for (size_t j = 0, o = 0; j < k; o += in[j].n, j++)
            memcpy(&out->refs[o * w], in[j].refs, in[j].n * w * sizeof(Ref));
    }
    for (size_t j = 0; j < k; j++) samples_free(&in[j]);
    free(in);
    return st;
}

/* Makes s's batches explicit (starts): the cuts of its batch size, a last short one kept unless
 * drop_last, at most max_batches when limited; the samples after the last batch are left out. */
static void explicit_batches(Samples *s) {
    if (s->starts) return;
    size_t b = s->batch, nb = s->drop_last ? s->n / b : (s->n + b - 1) / b;
    if (s->limited && nb > s->max_batches) nb = s->max_batches;
    s->starts = fl_xcalloc(nb + 1, sizeof *s->starts);
    for (size_t i = 0; i < nb; i++) s->starts[i + 1] = s->starts[i] + (s->n - i * b < b ? s->n - i * b : b);
    s->nbatches = nb;
    s->n = s->starts[nb];
    s->drop_last = s->limited = false;
}

/* Fluid's shuffle reader over a reader of batches: each run of n batches in a random order. */
static void shuffle_batches(Samples *s, size_t n, FlRng *rng) {
    explicit_batches(s);
    size_t nb = s->nbatches, *order = fl_xcalloc(nb + 1, sizeof *order);
    for (size_t i = 0; i < nb; i++) order[i] = i;
    for (size_t from = 0; from < nb; from += n) {
        size_t m = nb - from < n ? nb - from : n, *base = order + from;
        for (size_t k = m; k > 1; k--) { /* Fisher-Yates, as the shuffle of samples */
            size_t j = (size_t)(fl_rng_uniform(rng) * (double)k), t = base[k - 1];
            base[k - 1] = base[j];
            base[j] = t;
        }
    }
    Ref *refs = fl_xcalloc(s->n * s->w + 1, sizeof(Ref));
    size_t *starts = fl_xcalloc(nb + 1, sizeof *starts);
    for (size_t i = 0; i < nb; i++) {
        size_t from = s->starts[order[i]], len = s->starts[order[i] + 1] - from;
        memcpy(&refs[starts[i] * s->w], &s->refs[from * s->w], len * s->w * sizeof(Ref));
        starts[i + 1] = starts[i] + len;
    }
    free(order);
    free(s->refs);
    free(s->starts);
    s->refs = refs;
    s->starts = starts;
}

/* Fluid's batch reader over a reader of batches: each n batches one after the other make a batch,
 * and a last run of fewer than n is dropped (its discard_leftover). */
static void concat_batches(Samples *s, size_t n) {
    explicit_batches(s);
    size_t ng = s->nbatches / n;
    for (size_t g = 0; g <= ng; g++) s->starts[g] = s->starts[g * n];
    s->nbatches = ng;
    s->n = s->starts[ng];
}

/* The samples node i gives in this epoch. */
static FlStatus samples(Reader *r, size_t i, FlRng *rng, Samples *out, FlErr *e) {
    const FlReaderDesc *d = r->b->readers.data[i];
    *out = (Samples){0};
    if (is_source(d)) {
        const FlDsTable *t = r->tables[i];
        size_t passes = d->pass_num > 1 ? (size_t)d->pass_num : 1; /* open_files: its passes, one after the other */
        if (t->rows && passes > SIZE_MAX / 2 / sizeof(Ref) / t->rows)
            return fl_err(e, "open_files: %lld passes of %zu records are too many", (long long)d->pass_num, t->rows);
        *out = (Samples){.refs = fl_xcalloc(t->rows * passes + 1, sizeof(Ref)), .n = t->rows * passes, .w = 1};
        for (size_t k = 0; k < t->rows * passes; k++) out->refs[k] = (Ref){t, k % t->rows};
        return FL_OK;
    }
    if (strcmp(d->kind, "chain") == 0 || strcmp(d->kind, "compose") == 0) return join(r, d, rng, out, e);
    if (samples(r, (size_t)d->inputs.data[0], rng, out, e)) return FL_ERROR;
    size_t n = (size_t)d->n;
    bool of_batches = strcmp(d->kind, "shuffle_batches") == 0 || strcmp(d->kind, "concat_batches") == 0;
    bool of_samples = strcmp(d->kind, "shuffle") == 0 || strcmp(d->kind, "batch") == 0;
    if ((of_batches && !out->batch) || (of_samples && out->batch)) {
        samples_free(out);
        return fl_err(e, "%s of reader %d: it is %sbatched", d->kind, (int)d->inputs.data[0], of_batches ? "not " : "");
    }
    if (strcmp(d->kind, "shuffle") == 0) {
        Ref *tmp = fl_xcalloc(out->w + 1, sizeof(Ref));
        for (size_t from = 0; from < out->n; from += n) {
            size_t m = out->n - from < n ? out->n - from : n;
            Ref *base = out->refs + from * out->w;
            for (size_t k = m; k > 1; k--) { /* Fisher-Yates */
                size_t j = (size_t)(fl_rng_uniform(rng) * (double)k);
                memcpy(tmp, base + (k - 1) * out->w, out->w * sizeof(Ref));
                memcpy(base + (k - 1) * out->w, base + j * out->w, out->w * sizeof(Ref));
                memcpy(base + j * out->w, tmp, out->w * sizeof(Ref));
            }
        }
        free(tmp);
    } else if (strcmp(d->kind, "batch") == 0) {
        out->batch = n;
        out->drop_last = d->drop_last;
    } else if (strcmp(d->kind, "shuffle_batches") == 0) {
        shuffle_batches(out, n, rng);
    } else if (strcmp(d->kind, "concat_batches") == 0) {
        concat_batches(out, n);
    } else if (strcmp(d->kind, "firstn") == 0) {
        if (out->starts) {
            if (out->nbatches > n) out->nbatches = n;
            out->n = out->starts[out->nbatches];
        } else if (out->batch) {
            out->max_batches = out->limited && out->max_batches < n ? out->max_batches : n;
            out->limited = true;
        } else {
            out->n = out->n < n ? out->n : n;
        }
    }
    return FL_OK; /* buffered: the same samples */
}

/* Batch i of an epoch: its first sample and its count. */
static void batch_at(const Epoch *ep, size_t i, size_t *from, size_t *n) {
    if (ep->s.starts) {
        *from = ep->s.starts[i];
        *n = ep->s.starts[i + 1] - *from;
        return;
    }
    size_t b = ep->s.batch ? ep->s.batch : 1;
    *from = i * b;
    *n = ep->s.n - *from < b ? ep->s.n - *from : b;
}

static FlStatus run_reader_epoch(RunCtx *rc, const ExecOp *op, FlScope *s) {
    FlVar *v = fl_exec_var_read(s, fl_exec_in_args(op, FL_IN_reader_epoch_Reader));
    Reader *r = v ? fl_var_retain_object(v, reader_retain) : NULL;
    if (!r) return fl_exec_op_error(rc, op, "Reader holds no reader (reader_open has not run)");
    FlRng rng;
    fl_rng_init2(&rng, r->seed, __atomic_fetch_add(&r->epochs, 1, __ATOMIC_ACQ_REL));
    Epoch *ep = fl_xcalloc(1, sizeof *ep);
    ep->r = r;
    FlErr e;
    if (samples(r, r->root, &rng, &ep->s, &e)) {
        epoch_release(ep);
        return fl_exec_op_error(rc, op, "%s", e.msg);
    }
    size_t b = ep->s.batch ? ep->s.batch : 1;
    ep->batches = ep->s.drop_last ? ep->s.n / b : (ep->s.n + b - 1) / b;
    if (ep->s.limited && ep->batches > ep->s.max_batches) ep->batches = ep->s.max_batches;
    if (ep->s.starts) ep->batches = ep->s.nbatches;
    fl_var_set_object(fl_exec_var_write(s, fl_exec_out_args(op, FL_OUT_reader_epoch_Out)), ep, epoch_release);
    return FL_OK;
}
FL_CONTROL_ADAPTER(reader_epoch, NULL, run_reader_epoch);

/* ---------------------------------------------------------------- reader_next */

static FlStatus set_scalar(RunCtx *rc, const ExecOp *op, FlScope *s, int slot, FlDType dt, double val) {
    FlTensor t = FL_TENSOR_INIT;
    int64_t one = 1;
    FlErr e;
    if (fl_tensor_from(&e, &t, dt, 1, &one, &val)) return fl_exec_op_error(rc, op, "%s", e.msg);
    fl_var_take_tensor(fl_exec_var_write(s, fl_exec_out_args(op, slot)), &t);
    return FL_OK;
}

/* Record field f of source k (open_files') of the batch's n records from `from`: their rows one
 * after the other into t ([rows, width]) and, of a field of sequences, their sequences' offsets
 * into lod (Fluid's batch reader concatenates the records' LoD so). */
static FlStatus batch_records(const Epoch *ep, size_t from, size_t n, size_t k, size_t f, FlTensor *t, FlTensor *lod,
                              FlErr *e) {
    const FlDsField *fd = &ep->s.refs[from * ep->s.w + k].t->layout.fields[f];
    size_t rowbytes = fd->width * fl_dtype_size(fd->dtype), rows = 0, seqs = 0;
    for (size_t i = 0; i < n; i++) {
        const Ref *ref = &ep->s.refs[(from + i) * ep->s.w + k];
        rows += (size_t)(ref->t->offsets[f][ref->row + 1] - ref->t->offsets[f][ref->row]);
        if (fd->seq) seqs += (size_t)(ref->t->seq_at[f][ref->row + 1] - ref->t->seq_at[f][ref->row]);
    }
    int64_t ne[2] = {(int64_t)rows, (int64_t)fd->width}, nl = (int64_t)seqs + 1;
    if (fl_tensor_alloc_uninit(e, t, fd->dtype, 2, ne) || (fd->seq && fl_tensor_alloc_uninit(e, lod, FL_DT_INT64, 1, &nl)))
        return FL_ERROR;
    char *dst = fl_tensor_data(t);
    int64_t *offs = fd->seq ? fl_tensor_data(lod) : NULL, at = 0;
    size_t o = 0;
    if (offs) offs[o++] = 0;
    for (size_t i = 0; i < n; i++) {
        const Ref *ref = &ep->s.refs[(from + i) * ep->s.w + k];
        const int64_t *ro = ref->t->offsets[f];
        int64_t first = ro[ref->row], cnt = ro[ref->row + 1] - first;
        if (cnt) memcpy(dst + (size_t)at * rowbytes, (const char *)ref->t->data[f] + (size_t)first * rowbytes,
                        (size_t)cnt * rowbytes);
        for (int64_t q = offs ? ref->t->seq_at[f][ref->row] : 0; offs && q < ref->t->seq_at[f][ref->row + 1]; q++)
            offs[o++] = at + ref->t->seq_end[f][q] - first;
        at += cnt;
    }
    return FL_OK;
}

/* Field f of source k of the batch's n samples from `from` into t ([rows, width]); a sequence
 * field's steps one after the other ([steps, width]) and their offsets into lod ([n + 1]). On
 * error t and lod are left for the caller to release. */
static FlStatus batch_field(const Epoch *ep, size_t from, size_t n, size_t k, size_t f, FlTensor *t, FlTensor *lod,
                            FlErr *e) {
    const Ref *first = &ep->s.refs[from * ep->s.w + k];
    if (first->t->records) return batch_records(ep, from, n, k, f, t, lod, e);
    const FlDsField *fd = &first->t->layout.fields[f];
    size_t rowbytes = fd->width * fl_dtype_size(fd->dtype), steps = n;
    int64_t *offs = NULL;
    if (fd->seq) {
        int64_t nl = (int64_t)n + 1;
        if (fl_tensor_alloc_uninit(e, lod, FL_DT_INT64, 1, &nl)) return FL_ERROR;
        offs = fl_tensor_data(lod);
        offs[0] = 0;
        for (size_t i = 0; i < n; i++) {
            const Ref *ref = &ep->s.refs[(from + i) * ep->s.w + k];
            offs[i + 1] = offs[i] + ref->t->offsets[f][ref->row + 1] - ref->t->offsets[f][ref->row];
        }
        steps = (size_t)offs[n];
    }
    int64_t ne[2] = {(int64_t)steps, (int64_t)fd->width};
    if (fl_tensor_alloc_uninit(e, t, fd->dtype, 2, ne)) return FL_ERROR;
    char *dst = fl_tensor_data(t);
    for (size_t i = 0; i < n; i++) {
        const Ref *ref = &ep->s.refs[(from + i) * ep->s.w + k];
        const char *src = ref->t->data[f];
        if (!fd->seq) {
            memcpy(dst + i * rowbytes, src + ref->row * rowbytes, rowbytes);
            continue;
        }
        const int64_t *ro = ref->t->offsets[f];
        memcpy(dst + (size_t)offs[i] * rowbytes, src + (size_t)ro[ref->row] * rowbytes,
               (size_t)(ro[ref->row + 1] - ro[ref->row]) * rowbytes);
    }
    return FL_OK;
}

/* batch_field into out[0] (and a sequence field's offsets into out[1]). */
static FlStatus next_field(RunCtx *rc, const ExecOp *op, FlScope *s, const Epoch *ep, size_t from, size_t n,
                           size_t k, size_t f, const ArgRef *out) {
    FlTensor t = FL_TENSOR_INIT, lod = FL_TENSOR_INIT;
    FlErr e;
    if (batch_field(ep, from, n, k, f, &t, &lod, &e)) {
        fl_tensor_fini(&t);
        fl_tensor_fini(&lod);
        return fl_exec_op_error(rc, op, "%s", e.msg);
    }
    bool seq = ep->s.refs[from * ep->s.w + k].t->layout.fields[f].seq;
    fl_var_take_tensor(fl_exec_var_write(s, &out[0]), &t);
    if (seq) fl_var_take_tensor(fl_exec_var_write(s, &out[1]), &lod);
    return FL_OK;
}

/* The field layouts of node i's samples in order (a compose joins its inputs'), into out[*n..]. */
static void layouts(const Reader *r, size_t i, const FlDsLayout **out, size_t *n, size_t max) {
    const FlReaderDesc *d = r->b->readers.data[i];
    if (is_source(d)) {
        if (*n < max && r->tables[i]) out[(*n)++] = &r->tables[i]->layout;
        return;
    }
    size_t k = strcmp(d->kind, "compose") == 0 ? d->inputs.len : 1;
    for (size_t j = 0; j < k && j < d->inputs.len; j++) layouts(r, (size_t)d->inputs.data[j], out, n, max);
}

/* After the last batch: each Out an empty batch ([0, width] of its field's dtype; a sequence
 * field's offsets [1] = {0}), so that what converts it (a py_reader's cast and reshape) runs on
 * no rows. */
static FlStatus empty_batch(RunCtx *rc, const ExecOp *op, FlScope *s, const Epoch *ep) {
    const FlDsLayout *ls[FL_DS_MAX_FIELDS * 4];
    size_t nl = 0;
    layouts(ep->r, ep->r->root, ls, &nl, FL_ARRAY_LEN(ls));
    const ArgRef *outs = fl_exec_out_args(op, FL_OUT_reader_next_Out);
    int nout = fl_exec_nout(op, FL_OUT_reader_next_Out), o = 0;
    for (size_t k = 0; k < nl; k++)
        for (size_t f = 0; f < ls[k]->nfields && o < nout; f++, o++) {
            FlTensor t = FL_TENSOR_INIT;
            int64_t ne[2] = {0, (int64_t)ls[k]->fields[f].width}, one = 1;
            FlErr e;
            if (fl_tensor_alloc_uninit(&e, &t, ls[k]->fields[f].dtype, 2, ne)) return fl_exec_op_error(rc, op, "%s", e.msg);
            fl_var_take_tensor(fl_exec_var_write(s, &outs[o]), &t);
            if (!ls[k]->fields[f].seq || o + 1 >= nout) continue;
            FlTensor lod = FL_TENSOR_INIT;
            if (fl_tensor_alloc(&e, &lod, FL_DT_INT64, 1, &one)) return fl_exec_op_error(rc, op, "%s", e.msg);
            fl_var_take_tensor(fl_exec_var_write(s, &outs[++o]), &lod);
        }
    return FL_OK;
}

static FlStatus run_reader_next(RunCtx *rc, const ExecOp *op, FlScope *s) {
    FlVar *v = fl_exec_var_read(s, fl_exec_in_args(op, FL_IN_reader_next_Epoch));
    Epoch *ep = v ? fl_var_get_object(v) : NULL;
    if (!ep) return fl_exec_op_error(rc, op, "Epoch holds no epoch (reader_epoch has not run: for a py_reader, "
                                           "start() has not run before exe.run)");
    bool ok = ep->next < ep->batches;
    int64_t rows = 0;
    if (ok) {
        size_t from, n;
        batch_at(ep, ep->next++, &from, &n);
        rows = (int64_t)n;
        const ArgRef *outs = fl_exec_out_args(op, FL_OUT_reader_next_Out);
        int nout = fl_exec_nout(op, FL_OUT_reader_next_Out), o = 0;
        const Ref *first = &ep->s.refs[from * ep->s.w];
        for (size_t k = 0; k < ep->s.w; k++) {
            const FlDsLayout *l = &first[k].t->layout;
            for (size_t f = 0; f < l->nfields; f++, o++) {
                const FlDsField *fd = &l->fields[f];
                if (o + (int)fd->seq >= nout) {
                    o += fd->seq;
                    continue;
                }
                if (next_field(rc, op, s, ep, from, n, k, f, &outs[o])) return FL_ERROR;
                o += fd->seq;
            }
        }
        if (o != nout)
            return fl_exec_op_error(rc, op, "the reader's samples have %d fields but the op takes %d", o, nout);
    } else if (empty_batch(rc, op, s, ep)) {
        return FL_ERROR;
    }
    if (set_scalar(rc, op, s, FL_OUT_reader_next_Rows, FL_DT_INT64, (double)rows)) return FL_ERROR;
    return set_scalar(rc, op, s, FL_OUT_reader_next_Ok, FL_DT_BOOL, ok);
}
FL_CONTROL_ADAPTER(reader_next, NULL, run_reader_next);

/* ---------------------------------------------------------------- reader_end */

static FlStatus run_reader_end(RunCtx *rc, const ExecOp *op, FlScope *s) {
    (void)rc;
    Epoch *ep = fl_var_get_object(fl_exec_var_write(s, fl_exec_out_args(op, FL_OUT_reader_end_Epoch)));
    if (ep) ep->next = ep->batches;
    return FL_OK;
}
FL_CONTROL_ADAPTER(reader_end, NULL, run_reader_end);

/* ---------------------------------------------------------------- recordio_write */

/* t ([rows, width] of its reader's dtype) as a field declared dt of shape dims[0..rank) is: cast
 * and shaped [rows, dims[1..rank)]. */
static FlStatus as_declared(FlTensor *t, FlDType dt, int rank, const int64_t *dims, size_t i, FlErr *e) {
    int64_t w = 1;
    for (int k = 1; k < rank && w <= t->ne[1]; k++) w *= dims[k]; /* dims <= INT32_MAX: no overflow */
    if (w != t->ne[1])
        return fl_err(e, "field %zu of the reader holds %lld values a row, and its var %lld", i, (long long)t->ne[1],
                      (long long)w);
    if (t->dtype != dt) {
        FlTensor c = FL_TENSOR_INIT;
        if (fl_tensor_alloc_uninit(e, &c, dt, t->ndim, t->ne)) return FL_ERROR;
        int64_t n = fl_tensor_numel(t);
        for (int64_t q = 0; q < n; q++) fl_tensor_set(&c, q, fl_tensor_get(t, q));
        fl_tensor_fini(t);
        *t = c;
    }
    t->ndim = rank; /* contiguous: a reshape is new dims */
    for (int k = 1; k < rank; k++) t->ne[k] = dims[k];
    return FL_OK;
}

/* Whether path is a file one of the bundle's readers reads (the same file, when both exist). */
static bool is_input(const FlBundle *b, const char *path) {
    char *want = realpath(path, NULL);
    bool hit = false;
    for (size_t i = 0; want && !hit && i < b->readers.len; i++)
        for (size_t k = 0; !hit && k < b->readers.data[i]->files.len; k++) {
            char *have = realpath(b->readers.data[i]->files.data[k], NULL);
            hit = have && strcmp(have, want) == 0;
            free(have);
        }
    free(want);
    return hit;
}

/* The records of the next `limit` batches of ep (or those left), each the streams of its fields as
 * declared, into w. */
static FlStatus write_batches(const ExecOp *op, Epoch *ep, size_t limit, FlRecordioWriter *w, int64_t *records,
                              FlErr *e) {
    size_t nr = 0, ns = 0;
    const int64_t *ranks = fl_exec_attr_ints(op, "ranks", &nr), *dims = fl_exec_attr_ints(op, "shape_concat", &ns);
    const FlAttr *da = fl_ir_op_attr(op->desc, "dtypes"); /* flc verify checked the lists agree */
    size_t nd = da ? da->n : 0;
    FlBuf rec = {0};
    FlStatus st = FL_OK;
    for (size_t done = 0; st == FL_OK && ep->next < ep->batches && done < limit; done++) {
        size_t from, n, i = 0, at = 0;
        batch_at(ep, ep->next++, &from, &n);
        rec.len = 0;
        const Ref *first = &ep->s.refs[from * ep->s.w];
        for (size_t k = 0; st == FL_OK && k < ep->s.w; k++)
            for (size_t f = 0; st == FL_OK && f < first[k].t->layout.nfields; f++, i++) {
                FlTensor t = FL_TENSOR_INIT, lod = FL_TENSOR_INIT;
                FlDType dt = FL_DT_FLOAT32;
                bool seq = first[k].t->layout.fields[f].seq;
                if (i >= nd || i >= nr || !fl_dtype_from_name(da->strs[i], &dt))
                    st = fl_err(e, "the reader's samples have more fields than the %zu it writes", nd);
                if (st == FL_OK) st = batch_field(ep, from, n, k, f, &t, &lod, e);
                if (st == FL_OK) st = as_declared(&t, dt, (int)ranks[i], dims + at, i, e);
                if (st == FL_OK) st = fl_lodstream_write(e, &rec, &t, seq ? 1 : 0, seq ? &lod : NULL);
                if (i < nr) at += (size_t)ranks[i];
                fl_tensor_fini(&t);
                fl_tensor_fini(&lod);
            }
        if (st == FL_OK && i != nd) st = fl_err(e, "the reader's samples have %zu fields, and it writes %zu", i, nd);
        if (st == FL_OK) st = fl_recordio_writer_add(e, w, rec.data, rec.len);
        if (st == FL_OK) (*records)++;
    }
    fl_buf_free(&rec);
    return st;
}

/* The declaration of the fields: a dtype and a rank each, the ranks' dims in shape_concat, each
 * after a field's first positive. */
static FlStatus prep_recordio_write(ExecOp *op, FlErr *e) {
    size_t nr = 0, ns = 0, at = 0;
    const int64_t *ranks = fl_exec_attr_ints(op, "ranks", &nr), *dims = fl_exec_attr_ints(op, "shape_concat", &ns);
    const FlAttr *da = fl_ir_op_attr(op->desc, "dtypes");
    if (!da || da->n != nr || !nr) return fl_err(e, "%zu dtypes and %zu ranks", da ? da->n : 0, nr);
    for (size_t i = 0; i < nr; i++) {
        FlDType dt;
        if (!fl_dtype_from_name(da->strs[i], &dt)) return fl_err(e, "field %zu of dtype '%s'", i, da->strs[i]);
        if (ranks[i] < 1 || ranks[i] > FL_MAX_DIMS || (size_t)ranks[i] > ns - at)
            return fl_err(e, "field %zu of rank %lld (%zu dims)", i, (long long)ranks[i], ns);
        for (int64_t k = 1; k < ranks[i]; k++)
            if (dims[at + (size_t)k] < 1 || dims[at + (size_t)k] > INT32_MAX)
                return fl_err(e, "field %zu: dim %lld is %lld", i, (long long)k, (long long)dims[at + (size_t)k]);
        at += (size_t)ranks[i];
    }
    if (at != ns) return fl_err(e, "%zu dims for ranks of %zu", ns, at);
    int64_t comp = fl_exec_attr_int(op, "compressor"), bpf = fl_exec_attr_int(op, "batch_per_file");
    if (comp != FL_RECORDIO_NO_COMPRESS && comp != FL_RECORDIO_SNAPPY)
        return fl_err(e, "compressor %lld (0 none, 1 Snappy)", (long long)comp);
    const char *path = fl_exec_attr_string(op, "file_path");
    size_t pl = strlen(path), xl = strlen(".recordio");
    if (bpf < 0 || (bpf > 0 && (pl <= xl || strcmp(path + pl - xl, ".recordio") != 0)))
        return fl_err(e, "batch_per_file %lld of file_path '%s' (files are cut from a STEM.recordio)", (long long)bpf,
                      path);
    return FL_OK;
}

/* One RecordIO file at path of the next `limit` batches of ep (or those left), in chunks of max
 * records compressed by comp; records counts the records written. */
static FlStatus write_one(const ExecOp *op, Epoch *ep, const char *path, size_t limit, uint32_t max,
                          FlRecordioCompressor comp, int64_t *records, FlErr *e) {
    FlRecordioWriter w;
    fl_recordio_writer_init(&w, max, comp);
    FlStatus st = write_batches(op, ep, limit, &w, records, e);
    if (st == FL_OK) {
        fl_recordio_writer_flush(&w);
        st = fl_write_file(path, w.out.data ? w.out.data : "", w.out.len, e);
    }
    fl_recordio_writer_fini(&w);
    return st;
}

static FlStatus run_recordio_write(RunCtx *rc, const ExecOp *op, FlScope *s) {
    FlVar *v = fl_exec_var_read(s, fl_exec_in_args(op, FL_IN_recordio_write_Epoch));
    Epoch *ep = v ? fl_var_get_object(v) : NULL;
    if (!ep) return fl_exec_op_error(rc, op, "Epoch holds no epoch (reader_epoch has not run)");
    const char *path = fl_exec_attr_string(op, "file_path");
    int64_t max = fl_exec_attr_int(op, "max_num_records"), records = 0, bpf = fl_exec_attr_int(op, "batch_per_file");
    uint32_t m = max > 0 && max <= UINT32_MAX ? (uint32_t)max : 1000;
    FlRecordioCompressor comp = (FlRecordioCompressor)fl_exec_attr_int(op, "compressor"); /* prep checked it */
    FlErr e;
    if (bpf == 0) {
        if (is_input(ep->r->b, path))
            return fl_exec_op_error(rc, op, "'%s' is a file a reader of the program reads: write the RecordIO file to "
                                    "another path", path);
        if (write_one(op, ep, path, SIZE_MAX, m, comp, &records, &e))
            return fl_exec_op_error(rc, op, "writing '%s': %s", path, e.msg);
        return set_scalar(rc, op, s, FL_OUT_recordio_write_Out, FL_DT_INT64, (double)records);
    }
    /* Fluid's cut: a file is written when its last batch is read, the first after batch_per_file + 1 */
    size_t stem = strlen(path) - strlen(".recordio"), per = (size_t)bpf;
    FlBuf name = {0};
    FlStatus st = FL_OK;
    for (int k = 0; st == FL_OK && ep->batches - ep->next >= (k == 0 ? per + 1 : per); k++) {
        name.len = 0;
        fl_buf_printf(&name, "%.*s-%05d.recordio", (int)stem, path, k);
        if (is_input(ep->r->b, name.data))
            st = fl_exec_op_error(rc, op, "'%s' is a file a reader of the program reads: write the RecordIO files to "
                                  "another path", name.data);
        else if (write_one(op, ep, name.data, k == 0 ? per + 1 : per, m, comp, &records, &e))
            st = fl_exec_op_error(rc, op, "writing '%s': %s", name.data, e.msg);
    }
    fl_buf_free(&name);
    ep->next = ep->batches; /* the batches after the last full file are read and not written, as Fluid's are */
    if (st) return st;
    return set_scalar(rc, op, s, FL_OUT_recordio_write_Out, FL_DT_INT64, (double)records);
}
FL_CONTROL_ADAPTER(recordio_write, prep_recordio_write, run_recordio_write);
