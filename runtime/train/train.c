/* train.c: the training driver (see train.h): the run spec's readers as datasets, epochs of
 * batches (or trainer shares) fed to the executor, figures weighted by rows, evaluation and
 * prediction.
 *
 * How: a trainer keeps the readers' datasets and one fetch list; fl_train_run runs the bundle's
 * driver (fluid.train's: compiler/ir/train_driver.h), whose report ops call the report host
 * below: each step's report_next fills one tensor per feed from the epoch (data.h) and the
 * driver runs the main program; a sequence feed fills its values [T, 1] and one tensor per LoD
 * level, fed to the data var's offset vars (VarDesc.lod). In an MPI job each trainer records
 * (rows, figures...) per step and trainer 0 merges everyone's records at the epoch's end.
 * Invariants: the trainer never changes the program; figures are always weighted by rows, so a
 * job of T trainers with batch b reports what a local run with batch T*b reports.
 */
#define _GNU_SOURCE
#include "runtime/train/train.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "compiler/ir/ir.h"
#include "compiler/ir/train_driver.h"
#include "compiler/ops.h"
#include "runtime/core/driver.h"
#include "runtime/core/report_host.h"

typedef struct Data {
    FlDataSource *src; /* when train and test come from one split */
    FlDataset *train, *test;
    FlDataFeed *feeds; /* the training reader's feeds */
    size_t nfeeds;
} Data;

struct FlTrainer {
    const FlLoadedProgram *prog;
    const FlBundle *bundle;
    FlExecutor *ex;
    FlScope *scope;
    FlMpi *mpi; /* NULL: a local run */
    int T, t;   /* trainers and this trainer's index (1, 0 locally) */
    Data d;
    size_t nfetch;
    FlFetch *fetches;
    size_t loss_idx;
    char *inputs[2]; /* the readers' files */
    size_t ninputs;
    bool stopped; /* the last run ended at a checkpoint that asked to stop */
};

struct FlTrainPredictInput {
    FlDataset *ds;
    const char *var; /* borrowed from the caller or the program */
    bool classes;
};

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* This process's CPU seconds so far (user + system, all threads). */
static double cpu_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---------------------------------------------------------------- data */

/* The values of one step of sequence var `name` of block 0: its row's size ([-1, 4]: 4), else 1. */
static size_t seq_width(const FlBlock *b0, const char *name) {
    const FlVarDesc *d = b0 ? fl_ir_var_find(b0, name) : NULL;
    int64_t n = 1;
    for (int k = 1; d && k < d->ndim; k++)
        if (d->shape[k] > 0) n *= d->shape[k];
    return (size_t)n;
}

static FlDataSpec spec_of(const FlReaderSpec *r, const FlBlock *b0, FlDataFeed **feeds_out, size_t *nfeeds) {
    FlDataFeed *feeds = fl_xcalloc(r->feeds.len + 1, sizeof *feeds);
    for (size_t i = 0; i < r->feeds.len; i++) {
        const FlFeedCols *fc = &r->feeds.data[i];
        feeds[i].name = fc->feed;
        size_t *cols = fl_xcalloc(fc->ncols + 1, sizeof *cols);
        for (size_t k = 0; k < fc->ncols; k++) cols[k] = (size_t)fc->cols[k];
        feeds[i].cols = cols;
        feeds[i].ncols = fc->ncols;
        feeds[i].levels = fc->lod_level;
        if (fc->lod_level == 1) feeds[i].width = seq_width(b0, fc->feed);
        feeds[i].dtype = fc->dtype;
        feeds[i].label = i + 1 == r->feeds.len && r->feeds.len > 1; /* the last feed is the label */
        for (size_t k = 0; k < r->normalize.len; k++)
            if (!strcmp(r->normalize.data[k], fc->feed)) feeds[i].normalize = true;
        for (size_t k = 0; k < r->scale_feeds.len; k++)
            if (!strcmp(r->scale_feeds.data[k], fc->feed)) {
                feeds[i].has_scale = true;
                feeds[i].scale = r->scale_factors.data[k];
            }
    }
    FlDataSpec s = {0};
    s.path = r->path;
    s.skip_rows = (size_t)r->skip_rows;
    s.sep = r->sep;
    s.feeds = feeds;
    s.nfeeds = r->feeds.len;
    s.part = r->part == FL_PART_TRAIN ? FL_DATA_TRAIN : r->part == FL_PART_TEST ? FL_DATA_TEST : FL_DATA_ALL;
    s.split_fraction = r->split_fraction;
    s.split_seed = (uint64_t)r->split_seed;
    *feeds_out = feeds;
    *nfeeds = r->feeds.len;
    return s;
}

static void free_feeds(FlDataFeed *feeds, size_t n) {
    for (size_t i = 0; feeds && i < n; i++) free((void *)feeds[i].cols);
    free(feeds);
}

static bool same_source(const FlReaderSpec *a, const FlReaderSpec *b) {
    return a && b && !strcmp(a->path, b->path) && !strcmp(a->base_dir, b->base_dir) && a->skip_rows == b->skip_rows &&
           a->sep == b->sep && a->has_split && b->has_split && a->split_fraction == b->split_fraction &&
           a->split_seed == b->split_seed && a->part != b->part;
}

static FlStatus open_data(const FlRunSpec *rs, const FlBlock *b0, Data *d, FlErr *e) {
    if (!rs->reader) return FL_OK;
    FlDataSpec s = spec_of(rs->reader, b0, &d->feeds, &d->nfeeds);
    if (same_source(rs->reader, rs->test_reader)) {
        /* one load, one split: the test part is normalised with the training part's statistics */
        if (fl_data_source_load(&s, rs->reader->base_dir, &d->src, e) != FL_OK) return FL_ERROR;
        FlDataset *a, *b;
        if (fl_data_split(d->src, s.split_fraction, s.split_seed, &a, &b, e) != FL_OK) return FL_ERROR;
        d->train = rs->reader->part == FL_PART_TEST ? b : a;
        d->test = rs->reader->part == FL_PART_TEST ? a : b;
        return FL_OK;
    }
    if (fl_data_open(&s, rs->reader->base_dir, &d->train, e) != FL_OK) return FL_ERROR;
    if (rs->test_reader) {
        FlDataFeed *tf;
        size_t ntf;
        FlDataSpec ts = spec_of(rs->test_reader, b0, &tf, &ntf);
        FlStatus st = fl_data_open(&ts, rs->test_reader->base_dir, &d->test, e);
        free_feeds(tf, ntf);
        if (st != FL_OK) return FL_ERROR;
    }
    return FL_OK;
}

static void close_data(Data *d) {
    fl_data_free(d->train);
    fl_data_free(d->test);
    fl_data_source_free(d->src);
    free_feeds(d->feeds, d->nfeeds);
}

/* The tensors a step feeds from ds: one per dense feed, 1 + levels per sequence feed. */
static size_t feed_tensors(const FlDataset *ds) {
    size_t n = 0;
    for (size_t f = 0; f < fl_data_feed_count(ds); f++) n += 1 + (size_t)fl_data_feed_levels(ds, f);
    return n;
}

/* Every sequence feed of ds has a data var of as many LoD levels in block 0, whose offset vars
 * share_feeds fills. */
static FlStatus check_lod_feeds(const FlBlock *b0, const FlDataset *ds, FlErr *e) {
    for (size_t f = 0; ds && f < fl_data_feed_count(ds); f++) {
        const char *name = fl_data_feed_name(ds, f);
        const FlVarDesc *vd = fl_ir_var_find(b0, name);
        int levels = fl_data_feed_levels(ds, f);
        if (levels && !vd)
            return fl_err(e, "the reader's feed '%s' is a sequence (io.sequence) but the program has no var '%s'", name, name);
        if (vd && vd->lod_level != levels)
            return fl_err(e, "the reader's feed '%s' has %d LoD level%s (io.sequence) but the program's var '%s' has lod_level %d",
                          name, levels, levels == 1 ? "" : "s", name, vd->lod_level);
    }
    return FL_OK;
}

/* The sequence feed of ds whose data var is cut by exactly the offsets vars of v (its data var
 * or a var the ops made from it row for row), or -1. */
static ptrdiff_t feed_cut_like(const FlBlock *b0, const FlDataset *ds, const FlVarDesc *v) {
    for (size_t f = 0; f < fl_data_feed_count(ds); f++) {
        const FlVarDesc *d = fl_ir_var_find(b0, fl_data_feed_name(ds, f));
        if (!d || d->lod_level != v->lod_level || fl_data_feed_levels(ds, f) != v->lod_level) continue;
        bool same = true;
        for (int k = 0; same && k < d->lod_level; k++) same = strcmp(d->lod[k], v->lod[k]) == 0;
        if (same) return (ptrdiff_t)f;
    }
    return -1;
}

/* The error of dataset row r, where sequence feeds fa and fb, which op combines row by row, are
 * cut differently: the file's line, what each holds and the op's .fl line. */
static FlStatus cut_mismatch(const FlBundle *bu, const FlOpDesc *op, const FlDataset *ds, size_t fa, size_t fb, size_t r,
                             FlErr *e) {
    size_t sa[FL_DATA_MAX_LEVELS + 1], sb[FL_DATA_MAX_LEVELS + 1];
    fl_data_seq_sizes(ds, fa, &r, 1, sa);
    fl_data_seq_sizes(ds, fb, &r, 1, sb);
    const char *na = fl_data_feed_name(ds, fa), *nb = fl_data_feed_name(ds, fb);
    char held[256];
    if (fl_data_feed_levels(ds, fa) == 1 || sa[1] != sb[1])
        snprintf(held, sizeof held, "feed '%s' holds %zu %s and feed '%s' %zu", na, sa[1],
                 fl_data_feed_levels(ds, fa) == 1 ? "values" : "sub-sequences", nb, sb[1]);
    else
        snprintf(held, sizeof held, "feeds '%s' and '%s' hold sub-sequences of other lengths", na, nb);
    const char *src = op->loc.file >= 0 && (size_t)op->loc.file < bu->source_paths.len ? bu->source_paths.data[op->loc.file] : "?";
    const char *base = strrchr(src, '/');
    return fl_err(e, "%s:%zu: %s, but op '%s' (%s:%d:%d) combines them row by row: each row must cut them into the "
                     "same sequences",
                  fl_data_file(ds), fl_data_row_line(ds, r), held, op->type, base ? base + 1 : src, op->loc.line,
                  op->loc.col);
}

/* The sequence feeds of ds that an op of the program combines row by row (fl_ops_lod_pairs: two
 * LoD inputs cut by two feeds' offsets) are cut alike in every row, checked before the first
 * step: a row that is not is an error at its line of the file, where the op would stop only at
 * that row's batch, naming offsets, and a batch whose totals happen to agree mixed the
 * sequences up. */
static FlStatus check_seq_pairs(const FlBundle *bu, const FlDataset *ds, FlErr *e) {
    const FlProgram *p = bu->main;
    const FlBlock *b0 = fl_ir_block(p, 0);
    FlStatus st = FL_OK;
    for (size_t bi = 0; ds && bi < p->blocks.len && st == FL_OK; bi++) {
        const FlBlock *b = p->blocks.data[bi];
        for (size_t i = 0; i < b->ops.len && st == FL_OK; i++) {
            FlLodPairs pairs = {0};
            fl_ops_lod_pairs(p, b, b->ops.data[i], &pairs);
            for (size_t k = 0; k < pairs.len && st == FL_OK; k++) {
                ptrdiff_t fa = feed_cut_like(b0, ds, pairs.data[k].var[0]), fb = feed_cut_like(b0, ds, pairs.data[k].var[1]);
                if (fa < 0 || fb < 0 || fa == fb) continue;
                for (size_t r = 0; r < fl_data_rows(ds) && st == FL_OK; r++)
                    if (!fl_data_seq_same_cut(ds, (size_t)fa, (size_t)fb, r))
                        st = cut_mismatch(bu, b->ops.data[i], ds, (size_t)fa, (size_t)fb, r, e);
            }
            FL_VEC_FREE(&pairs);
        }
    }
    return st;
}

/* The feeds of trainer `tr`'s share of batch b of an epoch (the whole batch with one trainer):
 * feed_tensors(ds) tensors, a sequence feed's values followed by its offsets, outermost first, fed
 * to the data var's offset vars. An empty share (a partial last batch) borrows the
 * first row of trainer 0's share, so the step runs on valid shapes; its figures and gradients then
 * count with weight 0 (the transport sends zero gradients with rows 0). */
static FlStatus share_feeds(const FlBlock *b0, const FlDataset *ds, const FlDataEpoch *ep, size_t b, size_t tr,
                            FlTensor *tensors, FlFeed *feeds, FlErr *e) {
    size_t rows;
    const size_t *which = fl_data_epoch_share(ep, b, tr, &rows);
    if (rows == 0) {
        which = fl_data_epoch_share(ep, b, 0, &rows);
        rows = 1; /* the first row only */
    }
    size_t nf = fl_data_feed_count(ds), k = 0;
    for (size_t f = 0; f < nf; f++) {
        const char *name = fl_data_feed_name(ds, f);
        int levels = fl_data_feed_levels(ds, f);
        FlTensor *t = &tensors[k];
        feeds[k++] = (FlFeed){name, t};
        if (!levels) {
            int64_t ne[2] = {(int64_t)rows, (int64_t)fl_data_feed_cols(ds, f)};
            if (fl_tensor_alloc(e, t, fl_data_feed_dtype(ds, f), 2, ne) != FL_OK) return FL_ERROR;
            fl_data_fill_rows(ds, f, which, rows, fl_tensor_data(t), fl_tensor_nbytes(t));
            continue;
        }
        const FlVarDesc *vd = fl_ir_var_find(b0, name);
        FL_ASSERT(vd && vd->lod_level == levels); /* check_lod_feeds */
        size_t sizes[FL_DATA_MAX_LEVELS + 1];
        fl_data_seq_sizes(ds, f, which, rows, sizes);
        int64_t ne[2] = {(int64_t)sizes[levels], (int64_t)fl_data_feed_width(ds, f)};
        if (fl_tensor_alloc(e, t, fl_data_feed_dtype(ds, f), 2, ne) != FL_OK) return FL_ERROR;
        int64_t *lod[FL_DATA_MAX_LEVELS];
        for (int l = 0; l < levels; l++) {
            int64_t n = (int64_t)sizes[l] + 1;
            if (fl_tensor_alloc(e, &tensors[k], FL_DT_INT64, 1, &n) != FL_OK) return FL_ERROR;
            lod[l] = fl_tensor_data(&tensors[k]);
            feeds[k] = (FlFeed){vd->lod[l], &tensors[k]};
            k++;
        }
        fl_data_fill_seq(ds, f, which, rows, fl_tensor_data(t), fl_tensor_nbytes(t), lod);
    }
    return FL_OK;
}

/* ---------------------------------------------------------------- trainer */

FlStatus fl_train_new(const FlLoadedProgram *prog, FlExecutor *ex, FlScope *scope, FlMpi *mpi, FlTrainer **out,
                      FlErr *err) {
    *out = NULL;
    FlTrainer *tr = fl_xcalloc(1, sizeof *tr);
    tr->prog = prog;
    tr->bundle = fl_program_bundle(prog);
    tr->ex = ex;
    tr->scope = scope;
    tr->mpi = mpi;
    tr->T = mpi ? fl_mpi_trainers(mpi) : 1;
    tr->t = mpi ? fl_mpi_index(mpi) : 0;
    const FlRunSpec *rs = &tr->bundle->run;
    tr->nfetch = rs->fetch_vars.len;
    tr->fetches = fl_xcalloc(tr->nfetch + 1, sizeof *tr->fetches);
    for (size_t i = 0; i < tr->nfetch; i++) {
        tr->fetches[i].name = rs->fetch_vars.data[i];
        tr->fetches[i].tensor = (FlTensor)FL_TENSOR_INIT;
        if (!strcmp(rs->fetch_names.data[i], "loss")) tr->loss_idx = i;
    }
    for (int k = 0; k < 2 && rs->present; k++) {
        const FlReaderSpec *r = k ? rs->test_reader : rs->reader;
        if (!r) continue;
        char *p = fl_data_path(r->base_dir, r->path);
        if (tr->ninputs && !strcmp(tr->inputs[0], p)) free(p);
        else tr->inputs[tr->ninputs++] = p;
    }
    const FlBlock *b0 = fl_ir_block(tr->bundle->main, 0);
    if (rs->present && (open_data(rs, b0, &tr->d, err) != FL_OK || check_lod_feeds(b0, tr->d.train, err) != FL_OK ||
                        check_lod_feeds(b0, tr->d.test, err) != FL_OK || check_seq_pairs(tr->bundle, tr->d.train, err) != FL_OK ||
                        check_seq_pairs(tr->bundle, tr->d.test, err) != FL_OK)) {
        fl_train_free(tr);
        return FL_ERROR;
    }
    *out = tr;
    return FL_OK;
}

void fl_train_free(FlTrainer *tr) {
    if (!tr) return;
    for (size_t i = 0; i < tr->nfetch; i++) fl_tensor_fini(&tr->fetches[i].tensor);
    free(tr->fetches);
    close_data(&tr->d);
    for (size_t i = 0; i < tr->ninputs; i++) free(tr->inputs[i]);
    free(tr);
}

size_t fl_train_fetch_count(const FlTrainer *tr) { return tr->nfetch; }
const char *fl_train_fetch_name(const FlTrainer *tr, size_t i) {
    FL_ASSERT(i < tr->nfetch);
    return tr->bundle->run.fetch_names.data[i];
}
size_t fl_train_loss_index(const FlTrainer *tr) { return tr->loss_idx; }
size_t fl_train_input_count(const FlTrainer *tr) { return tr->ninputs; }
const char *fl_train_input_path(const FlTrainer *tr, size_t i) {
    FL_ASSERT(i < tr->ninputs);
    return tr->inputs[i];
}
const FlDataset *fl_train_dataset(const FlTrainer *tr, bool test) { return test ? tr->d.test : tr->d.train; }

/* ---------------------------------------------------------------- figures */

static double mean_of(const FlTensor *t) {
    int64_t n = fl_tensor_numel(t);
    if (n <= 0 || !fl_tensor_has_data(t)) return NAN;
    double s = 0;
    for (int64_t i = 0; i < n; i++) s += fl_tensor_get(t, i);
    return s / (double)n;
}

static FlStatus check_finite(const FlTrainer *tr, int64_t epoch, int64_t step, const double *vals, FlErr *e) {
    if (tr->nfetch && !isfinite(vals[tr->loss_idx]))
        return fl_err(e, "epoch %lld, step %lld: the loss is %g; training diverged (try a smaller learning rate)",
                      (long long)epoch, (long long)step, vals[tr->loss_idx]);
    return FL_OK;
}

static FlStatus row(const FlTrainHooks *h, const char *phase, int64_t epoch, int64_t step, const double *v, FlErr *e) {
    return h->row ? h->row(h->ctx, phase, epoch, step, v, e) : FL_OK;
}

FlStatus fl_train_evaluate(FlTrainer *tr, const FlDataset *ds, size_t batch, double *out, double *nrows, FlErr *e) {
    for (size_t i = 0; i < tr->nfetch; i++) out[i] = 0;
    *nrows = 0;
    FlDataEpoch *ep;
    if (fl_data_epoch_new(ds, batch, 1, false, 0, 0, &ep, e) != FL_OK) return FL_ERROR;
    size_t nf = feed_tensors(ds);
    FlTensor *tens = fl_xcalloc(nf + 1, sizeof *tens);
    FlFeed *feeds = fl_xcalloc(nf + 1, sizeof *feeds);
    FlStatus st = FL_OK;
    for (size_t b = 0; b < fl_data_epoch_batches(ep) && st == FL_OK; b++) {
        size_t rows = fl_data_epoch_batch_rows(ep, b);
        for (size_t f = 0; f < nf; f++) tens[f] = (FlTensor)FL_TENSOR_INIT;
        st = share_feeds(fl_ir_block(tr->bundle->main, 0), ds, ep, b, 0, tens, feeds, e);
        if (st == FL_OK) st = fl_executor_predict(tr->ex, tr->scope, feeds, nf, tr->fetches, tr->nfetch, e);
        if (st == FL_OK) {
            for (size_t i = 0; i < tr->nfetch; i++) out[i] += mean_of(&tr->fetches[i].tensor) * (double)rows;
            *nrows += (double)rows;
        }
        for (size_t f = 0; f < nf; f++) fl_tensor_fini(&tens[f]);
    }
    for (size_t i = 0; i < tr->nfetch; i++) out[i] = *nrows > 0 ? out[i] / *nrows : NAN;
    free(tens);
    free(feeds);
    fl_data_epoch_free(ep);
    return st;
}

/* A job's trainers read the training data each from its own copy (the plan's folder on its host,
 * or --data-dir), and each takes its share of every global batch by the rows it has: trainers
 * that read different numbers of rows would run different numbers of steps and wait on each
 * other until the peer timeout. So before the first step trainer 0 gathers every trainer's rows
 * and stops the job, naming the trainers and the file, when they differ. */
static FlStatus same_data(FlTrainer *tr, FlErr *e) {
    if (!tr->mpi || tr->T < 2) return FL_OK;
    double mine = (double)fl_data_rows(tr->d.train), *all = tr->t == 0 ? fl_xcalloc((size_t)tr->T, sizeof *all) : NULL;
    FlStatus st = fl_mpi_gather_trainers(tr->mpi, &mine, 1, all, e);
    for (int t = 1; st == FL_OK && all && t < tr->T; t++)
        if (all[t] != all[0])
            st = fl_err(e, "the trainers read different data: trainer 0 has %.0f training rows (of '%s'), trainer %d "
                        "has %.0f; every trainer reads the same data, each from its copy (the plan's folder or "
                        "--data-dir)", all[0], tr->ninputs ? tr->inputs[0] : "?", t, all[t]);
    free(all);
    return st;
}

/* The training's state over the epochs (fl_train_run's report host). Figures travel as per-step records
 * (the step's rows, then the fetches' means); in an MPI job every trainer keeps the records of
 * the steps since the last report (a segment: up to an epoch's end or a checkpoint), and its
 * record block ends with its executor's run count. */
typedef struct Loop {
    FlTrainer *tr;
    const FlTrainHooks *h;
    bool lead;         /* trainer 0 (the local run): reports and evaluates */
    size_t n, w;       /* fetches; a record's width, 1 + n */
    double *sum, sum_rows; /* the epoch's figures so far, summed weighted by rows, and its rows */
    double rows_here;  /* of them, the rows this run trained (not those before a resume) */
    double *vals;
    double *rec, *all; /* MPI: this trainer's records of the segment; trainer 0: everyone's */
    size_t seg;        /* steps in the segment */
    int64_t seg_step0; /* the step before the segment's first */
    uint64_t *runs;    /* trainer 0: each trainer's run count at the last report (its own: now) */
    uint64_t seed;
    int64_t global;    /* rows of a global batch */
} Loop;

/* MPI: trainer 0 turns every trainer's records of the segment (nrec steps each, `stride`
 * doubles per trainer) into the log's rows and the epoch's sums: each step's figures averaged
 * over the trainers, weighted by rows; and keeps each trainer's run count. */
static FlStatus merge_steps(Loop *L, size_t nrec, size_t stride, int64_t epoch, FlErr *e) {
    FlTrainer *tr = L->tr;
    for (size_t b = 0; b < nrec; b++) {
        double rows = 0;
        for (size_t i = 0; i < L->n; i++) L->vals[i] = 0;
        for (int t = 0; t < tr->T; t++) {
            const double *rec = L->all + (size_t)t * stride + b * L->w;
            if (rec[0] <= 0) continue;
            rows += rec[0];
            for (size_t i = 0; i < L->n; i++) L->vals[i] += rec[0] * rec[1 + i];
        }
        for (size_t i = 0; i < L->n; i++) {
            L->sum[i] += L->vals[i];
            L->vals[i] = rows > 0 ? L->vals[i] / rows : NAN;
        }
        L->sum_rows += rows;
        L->rows_here += rows;
        int64_t step = L->seg_step0 + (int64_t)b + 1;
        if (row(L->h, "train", epoch, step, L->vals, e) != FL_OK) return FL_ERROR;
        if (check_finite(tr, epoch, step, L->vals, e) != FL_OK) return FL_ERROR;
    }
    for (int t = 0; t < tr->T; t++) L->runs[t] = (uint64_t)L->all[(size_t)t * stride + nrec * L->w];
    return FL_OK;
}

/* The end of a segment: in an MPI job trainer 0 gathers the trainers' records and reports them
 * (a local run reported each step as it ran). */
static FlStatus report(Loop *L, int64_t epoch, FlErr *e) {
    FlTrainer *tr = L->tr;
    size_t nrec = L->seg;
    L->seg = 0;
    FlStatus st = FL_OK;
    if (tr->mpi) {
        size_t stride = nrec * L->w + 1;
        L->rec[nrec * L->w] = (double)fl_executor_runs(tr->ex);
        st = fl_mpi_gather_trainers(tr->mpi, L->rec, stride, L->all, e);
        if (st == FL_OK && L->lead) st = merge_steps(L, nrec, stride, epoch, e);
    }
    L->seg_step0 += (int64_t)nrec;
    return st;
}

/* A checkpoint after `step`, the next step being batch `batch` of `epoch`: trainer 0 calls the
 * hook with the state, then tells the trainers whether training goes on. */
static FlStatus checkpoint(Loop *L, int64_t step, int64_t epoch, int64_t batch, bool *stop, FlErr *e) {
    FlTrainer *tr = L->tr;
    FlStatus st = FL_OK;
    *stop = false;
    if (L->lead && L->h->checkpoint) {
        L->runs[0] = fl_executor_runs(tr->ex); /* its evaluation's runs included */
        FlTrainState s = {.step = step, .epoch = epoch, .batch = batch, .seed = L->seed, .global_batch = L->global,
                          .rows = (int64_t)fl_data_rows(tr->d.train), .epoch_rows = L->sum_rows,
                          .epoch_sums = L->sum, .nfetch = L->n, .runs = L->runs, .trainers = tr->T};
        st = L->h->checkpoint(L->h->ctx, &s, stop, e);
    }
    if (st == FL_OK && tr->mpi && tr->T > 1) {
        uint8_t word = *stop;
        st = fl_mpi_bcast_trainers(tr->mpi, &word, 1, e);
        *stop = word != 0;
    }
    return st;
}

/* A resume state fits this run: the same seed, global batch, data and figures. */
static FlStatus check_resume(const Loop *L, const FlTrainState *r, FlErr *e) {
    const FlTrainer *tr = L->tr;
    size_t rows = fl_data_rows(tr->d.train);
    if (r->seed != L->seed)
        return fl_err(e, "the checkpoint's run shuffles with seed %llu, this one with %llu (--seed)",
                      (unsigned long long)r->seed, (unsigned long long)L->seed);
    if (r->global_batch != L->global)
        return fl_err(e, "the checkpoint's run trains on global batches of %lld rows, this one on %lld (--batch-size "
                      "is per trainer)", (long long)r->global_batch, (long long)L->global);
    if (r->rows != (int64_t)rows)
        return fl_err(e, "the checkpoint's run trains on %lld rows, this one reads %zu: other data",
                      (long long)r->rows, rows);
    if (r->nfetch != L->n || r->trainers < 1 || r->epoch < 1 || r->batch < 0 || r->step < 0)
        return fl_err(e, "the checkpoint's training state is not this program's (%zu figures, this one has %zu)",
                      r->nfetch, L->n);
    return FL_OK;
}

/* ---------------------------------------------------------------- the loop as a driver */

/* The report host (runtime/core/report_host.h) of the run spec's driver (train_driver.h): the
 * training's state behind its report ops, for a local run and a job's trainer alike. Every
 * trainer of a job runs the same driver, so the collective calls (the figures' gathering, the
 * checkpoints' word) come at the same points on each. Epochs before a resumed one and all after a
 * checkpoint that stops give no batch and report nothing. */
typedef struct DriverRun {
    Loop L;                 /* the figures, the checkpoints' state (L.lead: trainer 0) */
    const FlTrainOptions *opt;
    int64_t epochs, batch, every;
    const FlTrainState *resume;
    int64_t e0, b0;         /* where the run starts: epoch and batch (1, 0 unless resumed) */
    bool stop;              /* a checkpoint asked to stop: nothing more runs */
    size_t nw;              /* the watched vars */
    FlDataEpoch *ep;        /* the epoch being read (epoch `epoch`), NULL between epochs */
    int64_t epoch, step, step_e0; /* the epoch, the steps so far, and before the epoch's first here */
    size_t next, b, nb;     /* the epoch's next batch, the current step's batch, its batches */
    double t0, c0, tb;      /* the epoch's start (wall, CPU) and the current step's */
    double secs, cpu;       /* the epoch's training time, at its report_train_end */
    bool trained;           /* between an epoch's report_train_end and its report_epoch */
    FlDataEpoch *tep;       /* the evaluation's batches (trainer 0), NULL outside it */
    size_t tnext;
    double *te_sum, te_rows; /* the evaluation's figures so far, summed weighted by rows */
    double *watched, *trm, *te;
    bool failed;            /* a callback's error: err holds it, as the loop reports it */
    FlErr err;
} DriverRun;

static FlStatus dr_fail(DriverRun *d, FlErr *e) {
    d->failed = true;
    d->err = *e;
    return FL_ERROR;
}

static bool dr_has_test(const DriverRun *d) {
    const FlTrainer *tr = d->L.tr;
    return tr->d.test && fl_data_rows(tr->d.test) > 0;
}

static FlStatus dr_option(void *ctx, const char *name, int64_t dflt, int64_t *out, FlErr *e) {
    const FlTrainOptions *o = ((DriverRun *)ctx)->opt;
    if (!strcmp(name, "epochs")) *out = o && o->epochs >= 0 ? o->epochs : dflt;
    else if (!strcmp(name, "batch_size")) *out = o && o->batch_size > 0 ? o->batch_size : dflt;
    else if (!strcmp(name, "seed")) *out = o && o->seed >= 0 ? o->seed : dflt;
    else return fl_err(e, "option '%s' is not an option of the run (epochs, batch_size, seed)", name);
    return FL_OK;
}

static FlStatus dr_open(void *ctx, int64_t epochs, int64_t batch, int64_t seed, FlErr *e) {
    DriverRun *d = ctx;
    FlTrainer *tr = d->L.tr;
    const FlTrainOptions *o = d->opt;
    int64_t per = o && o->batch_trainers > 0 ? o->batch_trainers : tr->T; /* batches in a global one */
    d->epochs = epochs, d->batch = batch;
    d->L.seed = (uint64_t)seed, d->L.global = batch * per;
    d->e0 = 1, d->b0 = 0;
    if (same_data(tr, e) != FL_OK) return dr_fail(d, e);
    if (d->resume) { /* the state the checkpoint's step left: position, the epoch's figures, random state */
        if (check_resume(&d->L, d->resume, e) != FL_OK) return dr_fail(d, e);
        d->step = d->resume->step, d->e0 = d->resume->epoch, d->b0 = d->resume->batch;
        fl_executor_set_runs(tr->ex, d->resume->runs[tr->t < d->resume->trainers ? tr->t : 0]);
    }
    d->L.seg_step0 = d->step;
    return FL_OK;
}

/* The epoch's first batch here: its order, its clocks, its figures (a resumed epoch's so far). */
static FlStatus dr_epoch_begin(DriverRun *d, int64_t epoch, FlErr *e) {
    FlTrainer *tr = d->L.tr;
    Loop *L = &d->L;
    fl_data_epoch_free(d->ep);
    d->ep = NULL;
    d->t0 = now(), d->c0 = cpu_now();
    if (fl_data_epoch_new_global(tr->d.train, (size_t)L->global, (size_t)tr->T, true, L->seed, (uint64_t)epoch - 1,
                                 &d->ep, e) != FL_OK)
        return FL_ERROR;
    d->epoch = epoch;
    d->nb = fl_data_epoch_batches(d->ep);
    d->next = epoch == d->e0 ? (size_t)d->b0 : 0;
    d->step_e0 = d->step;
    memset(L->sum, 0, L->n * sizeof *L->sum);
    L->sum_rows = L->rows_here = 0;
    if (d->resume && epoch == d->e0 && d->b0 > 0) {
        memcpy(L->sum, d->resume->epoch_sums, L->n * sizeof *L->sum);
        L->sum_rows = d->resume->epoch_rows;
    }
    if (tr->mpi) { /* the epoch's records of its steps */
        free(L->rec);
        free(L->all);
        L->rec = fl_xcalloc(d->nb * L->w + 2, sizeof *L->rec);
        L->all = L->lead ? fl_xcalloc((size_t)tr->T * (d->nb * L->w + 1) + 1, sizeof *L->all) : NULL;
    }
    return FL_OK;
}

/* The next batch of the evaluation after the epoch: trainer 0's, in order. */
static FlStatus dr_next_test(DriverRun *d, FlTensor *out, size_t nout, int64_t *rows, bool *ok, FlErr *e) {
    FlTrainer *tr = d->L.tr;
    if (!d->trained || !d->L.lead || !dr_has_test(d)) return FL_OK;
    if (!d->tep) {
        if (fl_data_epoch_new(tr->d.test, (size_t)d->batch, 1, false, 0, 0, &d->tep, e) != FL_OK) return FL_ERROR;
        d->tnext = 0;
        memset(d->te_sum, 0, d->L.n * sizeof *d->te_sum);
        d->te_rows = 0;
    }
    if (d->tnext >= fl_data_epoch_batches(d->tep)) return FL_OK;
    size_t nf = feed_tensors(tr->d.test);
    if (nout != nf) return fl_err(e, "report_next: the test reader gives %zu feed tensors, the op takes %zu", nf, nout);
    size_t b = d->tnext++;
    FlFeed *feeds = fl_xcalloc(nf + 1, sizeof *feeds);
    FlStatus st = share_feeds(fl_ir_block(tr->bundle->main, 0), tr->d.test, d->tep, b, 0, out, feeds, e);
    free(feeds);
    if (st != FL_OK) return FL_ERROR;
    *rows = (int64_t)fl_data_epoch_batch_rows(d->tep, b);
    *ok = true;
    return FL_OK;
}

static FlStatus dr_next(void *ctx, int64_t epoch, bool test, FlTensor *out, size_t nout, int64_t *rows,
                        int64_t *global, int64_t *step, bool *ok, FlErr *e) {
    DriverRun *d = ctx;
    FlTrainer *tr = d->L.tr;
    *ok = false;
    *rows = *global = *step = 0;
    if (d->stop || epoch < d->e0) return FL_OK;
    if (test) return dr_next_test(d, out, nout, rows, ok, e) != FL_OK ? dr_fail(d, e) : FL_OK;
    if ((!d->ep || d->epoch != epoch) && dr_epoch_begin(d, epoch, e) != FL_OK) return dr_fail(d, e);
    if (d->next >= d->nb) return FL_OK;
    size_t nf = feed_tensors(tr->d.train);
    if (nout != nf) return dr_fail(d, (fl_err(e, "report_next: the reader gives %zu feed tensors, the op takes %zu", nf, nout), e));
    d->b = d->next++;
    d->tb = now();
    FlFeed *feeds = fl_xcalloc(nf + 1, sizeof *feeds);
    FlStatus st = share_feeds(fl_ir_block(tr->bundle->main, 0), tr->d.train, d->ep, d->b, (size_t)tr->t, out, feeds, e);
    free(feeds);
    if (st != FL_OK) return dr_fail(d, e);
    *rows = (int64_t)fl_data_epoch_share_rows(d->ep, d->b, (size_t)tr->t);
    *global = (int64_t)fl_data_epoch_batch_rows(d->ep, d->b);
    *step = d->step;
    *ok = true;
    return FL_OK;
}

static FlStatus dr_step(void *ctx, const FlTensor *fig, size_t n, int64_t rows, FlErr *e) {
    DriverRun *d = ctx;
    Loop *L = &d->L;
    FlTrainer *tr = L->tr;
    const FlTrainHooks *h = L->h;
    if (n != L->n + d->nw) return dr_fail(d, (fl_err(e, "report_step: %zu figures, the run has %zu", n, L->n + d->nw), e));
    d->step++;
    double step_secs = now() - d->tb;
    for (size_t i = 0; i < L->n; i++) L->vals[i] = mean_of(&fig[i]);
    for (size_t i = 0; i < d->nw; i++) d->watched[i] = mean_of(&fig[L->n + i]);
    if (tr->mpi) { /* trainer 0 reports the merged figures at the segment's end */
        L->rec[L->seg * L->w] = (double)rows;
        for (size_t i = 0; i < L->n; i++) L->rec[L->seg * L->w + 1 + i] = L->vals[i];
    } else {
        for (size_t i = 0; i < L->n; i++) L->sum[i] += L->vals[i] * (double)rows;
        L->sum_rows += (double)rows;
        L->rows_here += (double)rows;
        if (row(h, "train", d->epoch, d->step, L->vals, e) != FL_OK) return dr_fail(d, e);
    }
    L->seg++;
    if (rows > 0 && check_finite(tr, d->epoch, d->step, L->vals, e) != FL_OK) return dr_fail(d, e);
    if (L->lead && h->step) h->step(h->ctx, d->epoch, d->epochs, d->b, d->nb, L->n ? L->vals[tr->loss_idx] : 0);
    if (L->lead && h->step_done) {
        FlTrainStep s = {d->epoch, d->step, (double)fl_data_epoch_batch_rows(d->ep, d->b), step_secs, d->watched};
        if (h->step_done(h->ctx, &s, e) != FL_OK) return dr_fail(d, e);
    }
    /* a checkpoint within the epoch; one after its last step comes after its evaluation */
    if (d->every && d->step % d->every == 0 && d->b + 1 < d->nb &&
        (report(L, d->epoch, e) != FL_OK || checkpoint(L, d->step, d->epoch, (int64_t)d->b + 1, &d->stop, e) != FL_OK))
        return dr_fail(d, e);
    return FL_OK;
}

static FlStatus dr_train_end(void *ctx, int64_t epoch, FlErr *e) {
    DriverRun *d = ctx;
    Loop *L = &d->L;
    fl_data_epoch_free(d->ep);
    d->ep = NULL;
    if (d->stop || epoch < d->e0) return FL_OK;
    if (epoch != d->epoch) return dr_fail(d, (fl_err(e, "report_train_end: epoch %lld ends, but epoch %lld is read",
                                                      (long long)epoch, (long long)d->epoch), e));
    d->epoch = 0; /* the next report_next starts an epoch */
    if (L->seg && report(L, epoch, e) != FL_OK) return dr_fail(d, e);
    d->secs = now() - d->t0, d->cpu = cpu_now() - d->c0;
    for (size_t i = 0; i < L->n; i++) d->trm[i] = L->sum_rows > 0 ? L->sum[i] / L->sum_rows : NAN;
    d->trained = true;
    return FL_OK;
}

static FlStatus dr_test(void *ctx, const FlTensor *fig, size_t n, int64_t rows, FlErr *e) {
    DriverRun *d = ctx;
    if (!d->tep) return dr_fail(d, (fl_err(e, "report_test: no evaluation is read"), e));
    if (n != d->L.n) return dr_fail(d, (fl_err(e, "report_test: %zu figures, the run has %zu", n, d->L.n), e));
    for (size_t i = 0; i < n; i++) d->te_sum[i] += mean_of(&fig[i]) * (double)rows;
    d->te_rows += (double)rows;
    return FL_OK;
}

static FlStatus dr_epoch(void *ctx, int64_t epoch, FlErr *e) {
    DriverRun *d = ctx;
    Loop *L = &d->L;
    const FlTrainHooks *h = L->h;
    fl_data_epoch_free(d->tep);
    d->tep = NULL;
    if (!d->trained) return FL_OK;
    d->trained = false;
    if (L->lead) {
        bool has_test = dr_has_test(d);
        if (has_test) {
            for (size_t i = 0; i < L->n; i++) d->te[i] = d->te_rows > 0 ? d->te_sum[i] / d->te_rows : NAN;
            if (row(h, "test", epoch, d->step, d->te, e) != FL_OK) return dr_fail(d, e);
        }
        FlTrainEpoch rep = {epoch, d->epochs, d->step, d->trm, has_test ? d->te : NULL, L->rows_here, d->secs, d->cpu};
        if (h->epoch) h->epoch(h->ctx, &rep);
    }
    if (d->every && d->step % d->every == 0 && d->step > d->step_e0) {
        memset(L->sum, 0, L->n * sizeof *L->sum); /* the next epoch starts with no figures */
        L->sum_rows = 0;
        if (checkpoint(L, d->step, epoch + 1, 0, &d->stop, e) != FL_OK) return dr_fail(d, e);
    }
    return FL_OK;
}

/* A run: the bundle's driver (fluid.train's, compiler/ir/train_driver.h; with watched vars a copy
 * fetching the watched vars too) on the report host above. The errors are the
 * loop's own (a callback's, or the main program's as fl_executor_run gives it), not the driver
 * op's around them. */
FlStatus fl_train_run(FlTrainer *tr, const FlTrainOptions *opt, const FlTrainHooks *hooks, FlErr *e) {
    static const FlTrainHooks none = {0};
    const FlTrainHooks *h = hooks ? hooks : &none;
    tr->stopped = false;
    if (!tr->d.train) return fl_err(e, "the run spec has no reader: nothing to train on");
    size_t nw = opt ? opt->nwatch : 0;
    const FlProgram *bd = tr->bundle->driver;
    if (!bd)
        return fl_err(e, "the bundle holds no driver for its run spec (fl_program_load builds the driver of a file "
                         "written before format 3; an in-memory bundle: fl_ir_bundle_add_train_driver)");
    FlProgram *watched = NULL; /* opt->watch: the bundle's driver fetching those vars too */
    if (nw) {
        watched = fl_ir_program_clone(bd);
        if (fl_ir_train_driver_watch(watched, tr->bundle, opt->watch, nw, e) != FL_OK) {
            fl_ir_program_free(watched);
            return FL_ERROR;
        }
    }
    const FlProgram *drv = watched ? watched : bd;
    size_t n = tr->nfetch;
    DriverRun d = {.L = {.tr = tr, .h = h, .lead = tr->t == 0, .n = n, .w = 1 + n}, .opt = opt, .nw = nw,
                   .every = opt && opt->checkpoint_every > 0 ? opt->checkpoint_every : 0,
                   .resume = opt ? opt->resume : NULL};
    d.L.sum = fl_xcalloc(n + 1, sizeof(double));
    d.L.vals = fl_xcalloc(n + 1, sizeof(double));
    d.L.runs = fl_xcalloc((size_t)tr->T + 1, sizeof *d.L.runs);
    d.trm = fl_xcalloc(n + 1, sizeof(double));
    d.te = fl_xcalloc(n + 1, sizeof(double));
    d.te_sum = fl_xcalloc(n + 1, sizeof(double));
    d.watched = fl_xcalloc(nw + 1, sizeof(double));
    FlReportHost host = {&d, dr_option, dr_open, dr_next, dr_step, dr_train_end, dr_test, dr_epoch};
    fl_report_host_attach(tr->scope, &host);
    int code = 0;
    FlStatus st = fl_executor_run_driver_program(tr->ex, drv, tr->scope, &code, e);
    fl_report_host_attach(tr->scope, NULL);
    if (st != FL_OK && d.failed) {
        *e = d.err;
    } else if (st != FL_OK && e) { /* the main program's error, as fl_executor_run gives it */
        static const char pre[] = ": the main program: ";
        const char *m = strstr(e->msg, pre);
        if (m) memmove(e->msg, m + strlen(pre), strlen(m + strlen(pre)) + 1);
    }
    tr->stopped = d.stop && st == FL_OK;
    fl_data_epoch_free(d.ep);
    fl_data_epoch_free(d.tep);
    free(d.L.rec);
    free(d.L.all);
    free(d.L.sum);
    free(d.L.vals);
    free(d.L.runs);
    free(d.trm);
    free(d.te);
    free(d.te_sum);
    free(d.watched);
    fl_ir_program_free(watched);
    return st;
}

bool fl_train_stopped(const FlTrainer *tr) { return tr->stopped; }

FlStatus fl_train_run_once(FlTrainer *tr, FlErr *e) {
    if (tr->mpi) fl_mpi_step_begin(tr->mpi, 0, 0, 0);
    if (fl_executor_run(tr->ex, tr->scope, NULL, 0, tr->fetches, tr->nfetch, e) != FL_OK) return FL_ERROR;
    if (tr->mpi && fl_mpi_step_end(tr->mpi, e) != FL_OK) return FL_ERROR;
    return FL_OK;
}

/* ---------------------------------------------------------------- prediction */

/* The var to predict: `var`, else the input of the first op reading the label. */
static const char *prediction_var(const FlTrainer *tr, const char *var, FlErr *e) {
    if (var) return var;
    const FlBlock *b = fl_ir_block(tr->bundle->main, 0);
    const char *label = NULL;
    for (size_t f = 0; f < tr->d.nfeeds; f++)
        if (tr->d.feeds[f].label) label = tr->d.feeds[f].name;
    if (!label) {
        fl_err(e, "--predict: cannot tell the model's output (the reader has no label feed); name it with --predict-var");
        return NULL;
    }
    for (size_t i = 0; i < b->ops.len; i++) {
        const FlOpDesc *op = b->ops.data[i];
        bool reads_label = false;
        const char *other = NULL;
        for (size_t s = 0; s < op->ins.len; s++)
            for (size_t k = 0; k < op->ins.data[s].nargs; k++) {
                if (!strcmp(op->ins.data[s].args[k], label)) reads_label = true;
                else if (!other) other = op->ins.data[s].args[k];
            }
        if (reads_label && other) return other;
    }
    fl_err(e, "--predict: no op reads the label '%s'; name the output with --predict-var", label);
    return NULL;
}

FlStatus fl_train_predict_open(FlTrainer *tr, const char *path, const char *var, FlTrainPredictInput **out,
                               FlErr *e) {
    *out = NULL;
    const Data *d = &tr->d;
    if (!d->train) return fl_err(e, "--predict needs the program's reader (for the columns and the normalisation)");
    const char *v = prediction_var(tr, var, e);
    if (!v) return FL_ERROR;
    if (!fl_ir_var_find(fl_ir_block(tr->bundle->main, 0), v))
        return fl_err(e, "--predict-var: the program has no var '%s' (in its main program's global block)", v);
    const FlReaderSpec *rd = tr->bundle->run.reader;
    FlDataset *ds;
    /* feature rows only: no header lines (skipping the reader's would drop rows silently) */
    if (fl_data_predict_load(d->train, path, 0, rd->sep, &ds, e) != FL_OK) return FL_ERROR;
    FlTrainPredictInput *in = fl_xcalloc(1, sizeof *in);
    in->ds = ds;
    in->var = v;
    for (size_t f = 0; f < d->nfeeds; f++)
        if (d->feeds[f].label && d->feeds[f].dtype == FL_DT_INT64) in->classes = true;
    *out = in;
    return FL_OK;
}

void fl_train_predict_input_free(FlTrainPredictInput *in) {
    if (!in) return;
    fl_data_free(in->ds);
    free(in);
}

void fl_train_predictions_fini(FlTrainPredictions *p) {
    free(p->values);
    free(p->class_of);
    memset(p, 0, sizeof *p);
}

FlStatus fl_train_predict(FlTrainer *tr, const FlTrainPredictInput *in, FlTrainPredictions *out, FlErr *e) {
    const FlDataset *ds = in->ds;
    size_t nf = feed_tensors(ds), total = fl_data_rows(ds);
    FlDataEpoch *ep;
    if (fl_data_epoch_new(ds, 256, 1, false, 0, 0, &ep, e) != FL_OK) return FL_ERROR;
    FlTensor *tens = fl_xcalloc(nf + 1, sizeof *tens);
    FlFeed *feeds = fl_xcalloc(nf + 1, sizeof *feeds);
    FlFetch fetch = {in->var, FL_TENSOR_INIT};
    FlTrainPredictions p = {.rows = total, .classes = in->classes};
    bool seq = false; /* a sequence feed: the output's rows may be tokens, not input rows */
    for (size_t f = 0; f < fl_data_feed_count(ds); f++) seq |= fl_data_feed_levels(ds, f) > 0;
    if (in->classes) p.class_of = fl_xcalloc(total + 1, sizeof *p.class_of);
    FlStatus st = FL_OK;
    size_t done = 0;
    for (size_t b = 0; b < fl_data_epoch_batches(ep) && st == FL_OK; b++) {
        size_t rows = fl_data_epoch_batch_rows(ep, b);
        for (size_t f = 0; f < nf; f++) tens[f] = (FlTensor)FL_TENSOR_INIT;
        st = share_feeds(fl_ir_block(tr->bundle->main, 0), ds, ep, b, 0, tens, feeds, e);
        if (st == FL_OK) st = fl_executor_predict(tr->ex, tr->scope, feeds, nf, &fetch, 1, e);
        if (st == FL_OK && seq && (fetch.tensor.ndim < 1 || fetch.tensor.ne[0] != (int64_t)rows))
            st = fl_err(e, "--predict: '%s' has %s for a batch of %zu sequences; a prediction is one row per input row "
                           "(per sequence: pool the sequences, or name such a var with --predict-var)",
                        in->var, fl_tensor_shape(&fetch.tensor).s, rows);
        if (st == FL_OK) {
            size_t per = rows ? (size_t)fl_tensor_numel(&fetch.tensor) / rows : 0;
            if (!p.values) {
                p.width = per;
                p.values = fl_xcalloc(fl_mul_size(total, per) + 1, sizeof *p.values);
            }
            if (per != p.width)
                st = fl_err(e, "--predict: '%s' has %zu values per row in one batch and %zu in another", in->var,
                            p.width, per);
            for (size_t i = 0; st == FL_OK && i < rows; i++, done++) {
                int64_t best = 0;
                for (size_t k = 0; k < per; k++) {
                    double v = fl_tensor_get(&fetch.tensor, (int64_t)(i * per + k));
                    if (v > fl_tensor_get(&fetch.tensor, (int64_t)(i * per) + best)) best = (int64_t)k;
                    p.values[done * per + k] = v;
                }
                if (p.class_of) p.class_of[done] = best;
            }
        }
        for (size_t f = 0; f < nf; f++) fl_tensor_fini(&tens[f]);
    }
    fl_tensor_fini(&fetch.tensor);
    free(tens);
    free(feeds);
    fl_data_epoch_free(ep);
    if (st != FL_OK) {
        fl_train_predictions_fini(&p);
        return FL_ERROR;
    }
    *out = p;
    return FL_OK;
}
