/* fuzz_sequence.c: libFuzzer target for the io.sequence reader (runtime/data: a sequence column's
 * parsing, split, epochs, trainer shares and the packed batches' values and offsets).
 *
 * Input: two bytes choose the reader, the rest is the data file.
 *   byte 0: bit 0 levels (1, 2), bits 1-2 dtype (float32, float64, int64, float32), bits 3-4 the
 *           separator (',', ';', '|', '\t': the last two are refused for some readers), bit 5 the
 *           file gzip-compressed (.csv.gz), bit 6 a dense feed beside the sequence, bit 7 io.split
 *   byte 1: bits 0-1 the sequence's column, bits 2-3 the dense feed's, bits 4-5 skip_rows, bit 6
 *           the dense feed scaled, bit 7 the epochs shuffled
 * Oracle: any file loads or fails with a message naming the file (or the reader description);
 * nothing crashes, leaks or hangs. What loads is cut into epochs of batch 1-3 for 1-3 trainers,
 * and every share packed: each level's offsets start at 0 and rise strictly (a sequence and a
 * sub-sequence hold at least one number), level k ends at level k+1's count and the last level
 * at the values' count T; the share's values are its rows' own values, row after row (each row
 * packed alone gives the same bytes). Prediction input read from the same file (labels left
 * out) loads or fails the same way.
 *
 * Built with clang -fsanitize=fuzzer,address,undefined when FL_FUZZ is on (tests/fuzz/
 * sequence.cmake); fuzz_driver.c replays the corpus and the kept crashers in an ordinary build
 * (fuzz_sequence_corpus).
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "runtime/data/data.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char dir[64];

static void remove_dir(void) {
    char p[128];
    snprintf(p, sizeof p, "%s/d.csv", dir);
    unlink(p);
    snprintf(p, sizeof p, "%s/d.csv.gz", dir);
    unlink(p);
    rmdir(dir);
}

/* Writes the file the reader reads (plain or gzip); false when the machine cannot. */
static bool write_file(const char *path, const uint8_t *bytes, size_t n, bool gz) {
    if (gz) {
        gzFile f = gzopen(path, "wb");
        if (!f) return false;
        bool ok = n == 0 || gzwrite(f, bytes, (unsigned)n) == (int)n;
        return gzclose(f) == Z_OK && ok;
    }
    FILE *f = fopen(path, "wb");
    if (!f) return false;
    bool ok = fwrite(bytes, 1, n, f) == n;
    return fclose(f) == 0 && ok;
}

/* One share of sequence feed `feed`: the offsets' invariants, and its values are its rows' own. */
static void check_share(const FlDataset *ds, size_t feed, const size_t *rows, size_t n) {
    int L = fl_data_feed_levels(ds, feed);
    size_t es = fl_dtype_size(fl_data_feed_dtype(ds, feed));
    size_t sizes[FL_DATA_MAX_LEVELS + 1] = {0};
    fl_data_seq_sizes(ds, feed, rows, n, sizes);
    FL_ASSERT(sizes[0] == n);
    int64_t *lod[FL_DATA_MAX_LEVELS] = {0};
    for (int k = 0; k < L; k++) lod[k] = fl_xmalloc((sizes[k] + 1) * sizeof(int64_t));
    unsigned char *vals = fl_xmalloc(sizes[L] * es + 1);
    fl_data_fill_seq(ds, feed, rows, n, vals, sizes[L] * es, lod);
    for (int k = 0; k < L; k++) {
        FL_ASSERT(lod[k][0] == 0);
        for (size_t j = 0; j < sizes[k]; j++) FL_ASSERT(lod[k][j] < lod[k][j + 1]);
        FL_ASSERT((size_t)lod[k][sizes[k]] == sizes[k + 1]);
    }
    /* row after row: each row packed alone gives the same values */
    size_t at = 0;
    for (size_t i = 0; i < n; i++) {
        size_t one[FL_DATA_MAX_LEVELS + 1] = {0};
        fl_data_seq_sizes(ds, feed, &rows[i], 1, one);
        int64_t *l1[FL_DATA_MAX_LEVELS] = {0};
        for (int k = 0; k < L; k++) l1[k] = fl_xmalloc((one[k] + 1) * sizeof(int64_t));
        unsigned char *v1 = fl_xmalloc(one[L] * es + 1);
        fl_data_fill_seq(ds, feed, &rows[i], 1, v1, one[L] * es, l1);
        FL_ASSERT(at + one[L] <= sizes[L]);
        FL_ASSERT(memcmp(vals + at * es, v1, one[L] * es) == 0);
        at += one[L];
        for (int k = 0; k < L; k++) free(l1[k]);
        free(v1);
    }
    FL_ASSERT(at == sizes[L]);
    for (int k = 0; k < L; k++) free(lod[k]);
    free(vals);
}

static void check_dataset(const FlDataset *ds, size_t batch, size_t trainers, bool shuffle) {
    FlDataEpoch *ep;
    FlErr e;
    if (fl_data_epoch_new(ds, batch, trainers, shuffle, 7, 1, &ep, &e) != FL_OK)
        fl_panic(__FILE__, __LINE__, "an epoch of a loaded dataset failed: %s", e.msg);
    size_t seen = 0;
    for (size_t b = 0; b < fl_data_epoch_batches(ep); b++)
        for (size_t t = 0; t < trainers; t++) {
            size_t n;
            const size_t *rows = fl_data_epoch_share(ep, b, t, &n);
            FL_ASSERT(n == fl_data_epoch_share_rows(ep, b, t));
            seen += n;
            for (size_t f = 0; f < fl_data_feed_count(ds); f++) {
                if (fl_data_feed_levels(ds, f)) {
                    check_share(ds, f, rows, n);
                } else if (n) {
                    size_t bytes = n * fl_data_feed_cols(ds, f) * fl_dtype_size(fl_data_feed_dtype(ds, f));
                    void *buf = fl_xmalloc(bytes);
                    fl_data_epoch_fill(ep, b, t, f, buf, bytes);
                    free(buf);
                }
            }
        }
    FL_ASSERT(seen == fl_data_rows(ds));
    fl_data_epoch_free(ep);
}

/* A failure's message names the file (or the reader description, "io.csv: ..."). */
static void check_error(const FlErr *e, const char *path) {
    if (!strstr(e->msg, path) && strncmp(e->msg, "io.csv: ", 8) != 0)
        fl_panic(__FILE__, __LINE__, "a data error that does not name the file: %s", e->msg);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 2) return 0;
    if (!dir[0]) {
        snprintf(dir, sizeof dir, "/tmp/fl_fuzz_seq_XXXXXX");
        if (!mkdtemp(dir)) fl_panic(__FILE__, __LINE__, "mkdtemp failed");
        atexit(remove_dir);
    }
    uint8_t a = data[0], b = data[1];
    static const FlDType dtypes[4] = {FL_DT_FLOAT32, FL_DT_FLOAT64, FL_DT_INT64, FL_DT_FLOAT32};
    static const char seps[4] = {',', ';', '|', '\t'};
    bool gz = a & 0x20, dense = a & 0x40, split = a & 0x80;
    char path[128];
    snprintf(path, sizeof path, "%s/%s", dir, gz ? "d.csv.gz" : "d.csv");
    if (!write_file(path, data + 2, size - 2, gz)) fl_panic(__FILE__, __LINE__, "cannot write %s", path);
    size_t seq_col = b & 3, dense_col = (b >> 2) & 3;
    FlDataFeed feeds[2] = {
        {.name = "words", .cols = &seq_col, .ncols = 1, .levels = 1 + (a & 1), .dtype = dtypes[(a >> 1) & 3]},
        {.name = "label", .cols = &dense_col, .ncols = 1, .dtype = FL_DT_FLOAT32, .label = true,
         .has_scale = b & 0x40, .scale = 0.5},
    };
    FlDataSpec spec = {.path = path, .skip_rows = (b >> 4) & 3, .sep = seps[(a >> 3) & 3], .feeds = feeds,
                       .nfeeds = dense ? 2 : 1};
    FlDataSource *src = NULL;
    FlErr e = {{0}};
    if (fl_data_source_load(&spec, NULL, &src, &e) != FL_OK) {
        FL_ASSERT(src == NULL);
        check_error(&e, path);
        return 0;
    }
    FlDataset *train = NULL, *test = NULL;
    FlStatus st = split ? fl_data_split(src, 0.5, 3, &train, &test, &e) : fl_data_whole(src, &train, &e);
    fl_data_source_free(src);
    if (st != FL_OK) {
        FL_ASSERT(train == NULL && test == NULL);
        return 0; /* an empty training part */
    }
    size_t batch = 1 + (size % 3), trainers = 1 + (size / 3) % 3;
    check_dataset(train, batch, trainers, b & 0x80);
    if (test && fl_data_rows(test)) check_dataset(test, batch, trainers, false);
    FlDataset *pred = NULL; /* prediction rows: the file again, its label column ignored */
    if (fl_data_predict_load(train, path, spec.skip_rows, spec.sep, &pred, &e) == FL_OK) {
        FL_ASSERT(fl_data_feed_count(pred) == 1);
        check_dataset(pred, batch, 1, false);
    } else {
        FL_ASSERT(pred == NULL);
        check_error(&e, path);
    }
    fl_data_free(pred);
    fl_data_free(train);
    fl_data_free(test);
    return 0;
}
