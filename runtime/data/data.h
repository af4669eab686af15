/* data.h: the data readers behind `io.csv(...)` and `io.split(...)`: CSV (optionally gzipped)
 * loading with column selection, a deterministic train/test split, z-score normalisation with the
 * training part's statistics, scaling, seeded per-epoch shuffling, batching and trainer shares.
 *
 * There are no tensors here, only plain arrays: the executor wraps them.
 *
 * Objects and their life:
 *   FlDataSpec    what a `.fl` program records (path, columns, normalize, scale, split); borrowed.
 *   FlDataSource  a parsed file, every feed's raw values; immutable once loaded.
 *   FlDataset     some rows of a source, normalised and scaled and stored in each feed's dtype;
 *                 immutable; independent of its source (the source may be freed first).
 *   FlDataEpoch   one epoch of a dataset: a row order (shuffled or not) cut into batches and,
 *                 within each batch, trainer shares; immutable; borrows its dataset, which must
 *                 outlive it.
 *
 * A worked example (the training part of fit_a_line.fl, batch 20, one trainer):
 *
 *     size_t xcols[13] = {0, 1, ..., 12}, ycols[1] = {13};
 *     FlDataFeed feeds[2] = {
 *         {.name = "x", .cols = xcols, .ncols = 13, .dtype = FL_DT_FLOAT32, .normalize = true},
 *         {.name = "y", .cols = ycols, .ncols = 1, .dtype = FL_DT_FLOAT32, .label = true},
 *     };
 *     FlDataSpec spec = {.path = "data/boston_house_prices.csv", .skip_rows = 2,
 *                        .feeds = feeds, .nfeeds = 2,
 *                        .part = FL_DATA_TRAIN, .split_fraction = 0.8, .split_seed = 1};
 *     FlDataset *train;
 *     if (fl_data_open(&spec, "examples", &train, &err) != FL_OK) ... err.msg ...
 *     FlDataEpoch *ep;
 *     if (fl_data_epoch_new(train, 20, 1, true, seed, epoch, &ep, &err) != FL_OK) ...
 *     for (size_t i = 0; i < fl_data_epoch_batches(ep); i++) {
 *         size_t rows = fl_data_epoch_share_rows(ep, i, 0);   // 20, the last batch 5
 *         float x[20 * 13], y[20];
 *         fl_data_epoch_fill(ep, i, 0, 0, x, sizeof x);     // shape [rows, 13]
 *         fl_data_epoch_fill(ep, i, 0, 1, y, sizeof y);     // shape [rows, 1]
 *     }
 *     fl_data_epoch_free(ep);
 *     fl_data_free(train);
 *
 * Determinism: splits and shuffles use this module's own PRNG (splitmix64 and Fisher-Yates with
 * rejection sampling, integer arithmetic only), so a seed gives the same rows on every machine and
 * every trainer. The split permutation and the epoch shuffles come from different streams of the
 * same seed.
 *
 * Errors: functions returning FlStatus write a message to `e` (which may be NULL) and leave
 * their outputs NULL on failure, having freed whatever they had allocated. Data errors name the
 * file and its 1-based line (skipped rows counted), plus the byte column where a field is at fault:
 *     path:LINE: expected 14 columns, found 13
 *     path:LINE:COL: 'abc' is not a number (column 2, feed 'x')
 *     path:LINE:COL: empty field (column 2, feed 'x')
 *     path:LINE:COL: '3.5' is not an integer (column 64, feed 'label' is int64)
 *     path:LINE: column 2: value '1e39' is out of float32 range (feed 'x')
 *     path:LINE: column 2: value 3.5 scaled by 1e+38 is 3.5e+38, out of float32 range (feed 'x')
 *                    (normalising and scaling are checked when a dataset is made: split, whole,
 *                    open, predict_load; the value is the file's, the row's line is named)
 *     path:LINE: a NUL byte (byte column 5); a CSV file holds text
 *     path:LINE:COL: empty sequence (column 0, feed 'words')
 *     path:LINE:COL: empty sub-sequence before '|' (column 0, feed 'words')
 *     path:LINE:COL: '|' in a sequence of one level (column 0, feed 'words'; nested sequences
 *                    need io.sequence(0, levels=2))
 *     cannot open 'path': No such file or directory
 * Column numbers in messages are 0-based, as in `columns=`. Misuse by the caller (a feed or batch
 * index out of range, a buffer too small) is a bug and stops through FL_ASSERT.
 *
 * Ownership: arguments are borrowed; each object returned through an `out` parameter belongs to
 * the caller and is released with its _free function (_free(NULL) is a no-op).
 *
 * Thread-safety: there is no global state. Loading and creating objects is reentrant. Sources,
 * datasets and epochs are immutable after creation, so any number of threads may query, split,
 * fill from or start epochs on the same object at once; only _free must not race with other use.
 */
#ifndef FL_DATA_H
#define FL_DATA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/base.h"
#include "compiler/ir/dtype.h"

/* ---- reader description (what io.csv / io.split record) ---- */

/* The most levels a sequence feed may have. */
#define FL_DATA_MAX_LEVELS 2

/* One feed: a named input of the program filled from some columns of the file.
 *
 * A sequence feed (levels 1 or 2, io.sequence(col, levels)) reads one column whose field holds
 * the row's sequence: numbers separated by blanks (spaces or tabs), and with 2 levels
 * sub-sequences separated by '|' ("3 4 5|6 7|8": one row of three sub-sequences). A row's
 * sequence and each sub-sequence hold at least one number. A batch of such rows is packed without
 * padding: the values [T, 1] and the offsets of each level (see fl_data_fill_seq). A one-level
 * sequence of steps of `width` values each (a detection program's boxes: 4 numbers a step) holds
 * a multiple of width numbers per row and packs as [T, width], its offsets counting steps. */
typedef struct FlDataFeed {
    const char *name;
    const size_t *cols; /* 0-based column indices, in the order they fill the feed's row */
    size_t ncols;       /* at least 1; exactly 1 for a sequence feed */
    int levels;         /* 0: dense (ncols values per row); 1..FL_DATA_MAX_LEVELS: a sequence */
    size_t width;       /* a one-level sequence: the values of one step (0 or 1: one) */
    FlDType dtype;      /* FL_DT_FLOAT32, FL_DT_FLOAT64 or FL_DT_INT64 (values must be integral) */
    bool label;         /* a label: left out of prediction input */
    bool normalize;     /* z-score each column with the training part's mean and std (float and
                         * dense only) */
    bool has_scale;     /* multiply by `scale` (after normalising; float only) */
    double scale;
} FlDataFeed;

/* Which rows of the file a reader yields. */
typedef enum FlDataPart {
    FL_DATA_ALL,   /* no io.split: every row; the whole file is the training set */
    FL_DATA_TRAIN, /* io.split's first result */
    FL_DATA_TEST,  /* io.split's second result */
    FL_DATA_PART_COUNT
} FlDataPart;

typedef struct FlDataSpec {
    const char *path;   /* as written in io.csv: relative to the base directory unless absolute;
                         * a name ending in ".gz" must be gzip-compressed */
    size_t skip_rows;   /* lines skipped at the top of the file (headers) */
    char sep;           /* field separator; 0 means ',' */
    const FlDataFeed *feeds;
    size_t nfeeds;      /* at least 1; names distinct */
    FlDataPart part;
    double split_fraction; /* io.split's fraction (0 < f < 1), the training part's share */
    uint64_t split_seed;   /* io.split's seed */
} FlDataSpec;

typedef struct FlDataSource FlDataSource;
typedef struct FlDataset FlDataset;
typedef struct FlDataEpoch FlDataEpoch;

/* ---- loading ---- */

/* Checks the description and reads the file at spec->path, resolved against base_dir (the `.fl`
 * file's directory; NULL or "" for the working directory), plain or gzip. Every row must have
 * the first data row's column count; blank lines are skipped; fields are trimmed of blanks and
 * parsed strictly (the whole field a finite number, in the C locale) in the columns that feeds
 * use; int64 feeds need integral values. spec->part and the split fields are not used here. */
FlStatus fl_data_source_load(const FlDataSpec *spec, const char *base_dir, FlDataSource **out,
                             FlErr *e) FL_WARN_UNUSED;
void fl_data_source_free(FlDataSource *src);
/* The file a reader reads: path resolved against base_dir as fl_data_source_load does it
 * (malloc'd; the caller frees it). */
char *fl_data_path(const char *base_dir, const char *path);
size_t fl_data_source_rows(const FlDataSource *src); /* data rows (after skip_rows) */

/* io.split: a permutation of the source's rows from `seed`; its first round(fraction * n) rows are
 * the training part, the rest the test part; each part keeps file order. Normalised feeds use the
 * training part's statistics in both parts. Errors: fraction not in (0, 1), an empty training
 * part. Either output pointer may be NULL when that part is not wanted. */
FlStatus fl_data_split(const FlDataSource *src, double fraction, uint64_t seed, FlDataset **train,
                       FlDataset **test, FlErr *e) FL_WARN_UNUSED;
/* Every row, in file order, normalised with its own statistics (a reader without io.split). */
FlStatus fl_data_whole(const FlDataSource *src, FlDataset **out, FlErr *e) FL_WARN_UNUSED;

/* Load + split (or whole) + pick spec->part, in one call: the dataset a reader description
 * denotes. The train and test readers of one io.split may be opened independently: the split and
 * the statistics are the same each time. */
FlStatus fl_data_open(const FlDataSpec *spec, const char *base_dir, FlDataset **out,
                      FlErr *e) FL_WARN_UNUSED;

/* Prediction input (`flrun --predict DATA`): reads `path` (relative to the working directory)
 * with the training dataset's feeds minus its label feeds, at the same column indices (further
 * columns, such as a label, are ignored), normalised with `train`'s statistics and scaled alike.
 * sep 0 means ','. */
FlStatus fl_data_predict_load(const FlDataset *train, const char *path, size_t skip_rows, char sep,
                              FlDataset **out, FlErr *e) FL_WARN_UNUSED;

void fl_data_free(FlDataset *ds);

/* ---- dataset queries ---- */

size_t fl_data_rows(const FlDataset *ds);
size_t fl_data_feed_count(const FlDataset *ds);
/* The index of the feed called `name`, or -1. */
ptrdiff_t fl_data_feed_find(const FlDataset *ds, const char *name);
const char *fl_data_feed_name(const FlDataset *ds, size_t feed); /* owned by ds */
/* A dense feed's shape is [rows, fl_data_feed_cols()]; a sequence feed's values are [T, 1]. */
size_t fl_data_feed_cols(const FlDataset *ds, size_t feed);
FlDType fl_data_feed_dtype(const FlDataset *ds, size_t feed);
bool fl_data_feed_is_label(const FlDataset *ds, size_t feed);
/* The statistics a normalised feed uses (arrays of fl_data_feed_cols(), owned by ds; std 0 means
 * a constant column, only centred). Returns false, setting nothing, when the feed is not
 * normalised. */
bool fl_data_feed_stats(const FlDataset *ds, size_t feed, const double **mean, const double **std);
/* The 0-based data row of the file (after skip_rows) that dataset row `row` came from. */
size_t fl_data_row_origin(const FlDataset *ds, size_t row);
/* The file the rows came from (as opened: resolved against the base directory; owned by ds) and
 * the 1-based line of that file holding dataset row `row`: what errors about a row name. */
const char *fl_data_file(const FlDataset *ds);
size_t fl_data_row_line(const FlDataset *ds, size_t row);
/* Writes rows[0..n) of dense `feed`, row-major [n, cols], in the feed's dtype. buf holds at
 * least bufsize bytes, n * cols * dtype size of them used. */
void fl_data_fill_rows(const FlDataset *ds, size_t feed, const size_t *rows, size_t n, void *buf,
                       size_t bufsize);

/* 0 for a dense feed, else the levels of a sequence feed. */
int fl_data_feed_levels(const FlDataset *ds, size_t feed);
/* The values of one step of sequence feed `feed` (1, or FlDataFeed.width). */
size_t fl_data_feed_width(const FlDataset *ds, size_t feed);
/* The sizes of the packed batch of rows[0..n) of sequence feed `feed` with L levels:
 * sizes[0] = n (the rows' sequences), with 2 levels sizes[1] = their sub-sequences, and
 * sizes[L] = T, the values (the steps of `width` values). Offsets of level k have sizes[k] + 1
 * entries; the values are [T, 1] ([T, width]). */
void fl_data_seq_sizes(const FlDataset *ds, size_t feed, const size_t *rows, size_t n,
                       size_t sizes[FL_DATA_MAX_LEVELS + 1]);
/* Whether dataset row `row` of sequence feeds fa and fb (of as many levels) is cut alike: the
 * same number of entries at every level, each of the same length (their packed offsets are then
 * equal in every batch). */
bool fl_data_seq_same_cut(const FlDataset *ds, size_t fa, size_t fb, size_t row);
/* Packs rows[0..n) of sequence feed `feed`: their values one after the other into vals (the
 * feed's dtype, valbytes bytes, T * dtype size used) and the offsets of each level into lod[k]
 * (int64, sizes[k] + 1 entries, Fluid's absolute offsets: lod[k][0] == 0, non-decreasing; level
 * L-1 cuts the values, level k < L-1 cuts the entries of level k+1). E.g. the rows "1 2 3",
 * "4" and "5 6|7" of a 2-level feed give values [1..7], lod[0] = [0, 1, 2, 4] and
 * lod[1] = [0, 3, 4, 6, 7]. */
void fl_data_fill_seq(const FlDataset *ds, size_t feed, const size_t *rows, size_t n, void *vals,
                      size_t valbytes, int64_t *const *lod);

/* ---- epochs, batches, trainer shares ---- */

/* One epoch of `ds` for `trainers` trainers with per-trainer batch `batch_size` (DESIGN §6): the
 * global batch has trainers * batch_size rows, taken in order from the epoch's row order, which
 * is the same on every trainer: a permutation drawn from (seed, epoch) when `shuffle`, else
 * dataset order. Trainer t takes rows [t*b, (t+1)*b) of each global batch; the last global batch
 * may be partial (smaller), and then shares are unequal and some may be empty. With one trainer
 * this is plain batching. Errors: batch_size or trainers 0. */
FlStatus fl_data_epoch_new(const FlDataset *ds, size_t batch_size, size_t trainers, bool shuffle,
                           uint64_t seed, uint64_t epoch, FlDataEpoch **out,
                           FlErr *e) FL_WARN_UNUSED;
/* The same with a global batch of `global` rows cut into `trainers` shares as evenly as possible
 * (the first global % trainers shares one row more): a job running fewer trainers than its plan
 * keeps the plan's global batch, each trainer's share growing. Errors: global or trainers 0. */
FlStatus fl_data_epoch_new_global(const FlDataset *ds, size_t global, size_t trainers, bool shuffle,
                                  uint64_t seed, uint64_t epoch, FlDataEpoch **out, FlErr *e) FL_WARN_UNUSED;
void fl_data_epoch_free(FlDataEpoch *ep);
/* The number of global batches: ceil(rows / global rows); 0 for an empty dataset. */
size_t fl_data_epoch_batches(const FlDataEpoch *ep);
/* Rows of global batch `batch` (all trainers together): the weight denominator. */
size_t fl_data_epoch_batch_rows(const FlDataEpoch *ep, size_t batch);
/* Rows of trainer `trainer`'s share of global batch `batch` (0..its share of a whole batch): the
 * weight numerator. The shares of a batch sum to its rows. */
size_t fl_data_epoch_share_rows(const FlDataEpoch *ep, size_t batch, size_t trainer);
/* The epoch's row order: fl_data_rows() dataset row indices, each once. Owned by ep. */
const size_t *fl_data_epoch_order(const FlDataEpoch *ep);
/* The dataset rows of trainer `trainer`'s share of global batch `batch`: *n of them
 * (fl_data_epoch_share_rows()), owned by ep; fill them with fl_data_fill_rows (dense feeds) or
 * fl_data_fill_seq (sequence feeds: a share holds whole sequences). */
const size_t *fl_data_epoch_share(const FlDataEpoch *ep, size_t batch, size_t trainer, size_t *n);
/* Writes trainer `trainer`'s share of global batch `batch` for dense `feed`: shape
 * [fl_data_epoch_share_rows(), fl_data_feed_cols()], row-major, in the feed's dtype; bufsize is
 * the buffer's size in bytes (at least the share's). Nothing is written for an empty share. */
void fl_data_epoch_fill(const FlDataEpoch *ep, size_t batch, size_t trainer, size_t feed, void *buf,
                        size_t bufsize);

#endif
