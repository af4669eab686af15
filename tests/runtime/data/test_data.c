/* test_data.c: the data module (runtime/data/data.h) on the real example files and on small
 * temporary files: loading (plain, gzip, skip_rows), split, normalisation, scaling, shuffling,
 * batching, trainer shares, prediction input, and every data error with its exact message.
 * Runs from the repository root (ctest's working directory). */
#include <CUnit/Basic.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "runtime/data/data.h"

#define BOSTON "examples/data/boston_house_prices.csv"
#define DIGITS "examples/data/digits.csv.gz"

static char tmpdir[] = "/tmp/fl_data_test_XXXXXX";
static char tmpfiles[64][512];
static int ntmp;

/* Writes a file in the temporary directory; returns its path (static storage). */
static const char *tmp_write(const char *name, const char *text) {
    CU_ASSERT_FATAL(ntmp < 64);
    char *path = tmpfiles[ntmp++];
    snprintf(path, sizeof tmpfiles[0], "%s/%s", tmpdir, name);
    FILE *f = fopen(path, "wb");
    CU_ASSERT_FATAL(f != NULL);
    fputs(text, f);
    fclose(f);
    return path;
}

static int suite_init(void) { return mkdtemp(tmpdir) ? 0 : -1; }

static int suite_fini(void) {
    for (int i = 0; i < ntmp; i++) remove(tmpfiles[i]);
    rmdir(tmpdir);
    return 0;
}

/* ---- specs ---- */

static const size_t BOSTON_X[13] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
static const size_t BOSTON_Y[1] = {13};
static size_t DIGITS_IMG[64];
static const size_t DIGITS_LABEL[1] = {64};

typedef struct Spec {
    FlDataFeed feeds[2];
    FlDataSpec spec;
} Spec;

static void boston(Spec *s, FlDType dt, bool normalize) {
    memset(s, 0, sizeof *s);
    s->feeds[0] = (FlDataFeed){.name = "x", .cols = BOSTON_X, .ncols = 13, .dtype = dt,
                               .normalize = normalize};
    s->feeds[1] = (FlDataFeed){.name = "y", .cols = BOSTON_Y, .ncols = 1, .dtype = dt,
                               .label = true};
    s->spec = (FlDataSpec){.path = BOSTON, .skip_rows = 2, .feeds = s->feeds, .nfeeds = 2};
}

static void digits(Spec *s, bool scale) {
    memset(s, 0, sizeof *s);
    for (size_t i = 0; i < 64; i++) DIGITS_IMG[i] = i;
    s->feeds[0] = (FlDataFeed){.name = "img", .cols = DIGITS_IMG, .ncols = 64,
                               .dtype = FL_DT_FLOAT32, .has_scale = scale, .scale = 1.0 / 16};
    s->feeds[1] = (FlDataFeed){.name = "label", .cols = DIGITS_LABEL, .ncols = 1,
                               .dtype = FL_DT_INT64, .label = true};
    s->spec = (FlDataSpec){.path = DIGITS, .feeds = s->feeds, .nfeeds = 2};
}

static FlDataset *open_ok(const FlDataSpec *spec) {
    FlErr e = {{0}};
    FlDataset *ds = NULL;
    FlStatus st = fl_data_open(spec, NULL, &ds, &e);
    if (st != FL_OK) fprintf(stderr, "\nunexpected error: %s\n", e.msg);
    CU_ASSERT_FATAL(st == FL_OK);
    return ds;
}

/* Expects spec to fail to load with exactly `want`. */
static void open_fails(const FlDataSpec *spec, const char *base, const char *want) {
    FlErr e = {{0}};
    FlDataset *ds = (FlDataset *)1;
    CU_ASSERT_EQUAL(fl_data_open(spec, base, &ds, &e), FL_ERROR);
    CU_ASSERT_PTR_NULL(ds);
    if (strcmp(e.msg, want) != 0) fprintf(stderr, "\nwant: %s\ngot:  %s\n", want, e.msg);
    CU_ASSERT_STRING_EQUAL(e.msg, want);
}

/* All of feed `feed` as doubles (float32, float64 or int64), [rows, cols]; caller frees. */
static double *all_values(const FlDataset *ds, size_t feed) {
    size_t n = fl_data_rows(ds), nc = fl_data_feed_cols(ds, feed);
    FlDType dt = fl_data_feed_dtype(ds, feed);
    size_t bytes = n * nc * fl_dtype_size(dt);
    void *buf = malloc(bytes ? bytes : 1);
    size_t *rows = malloc((n ? n : 1) * sizeof *rows);
    for (size_t i = 0; i < n; i++) rows[i] = i;
    fl_data_fill_rows(ds, feed, rows, n, buf, bytes);
    double *out = malloc((n * nc > 0 ? n * nc : 1) * sizeof *out);
    for (size_t i = 0; i < n * nc; i++)
        out[i] = dt == FL_DT_FLOAT32   ? ((float *)buf)[i]
                 : dt == FL_DT_FLOAT64 ? ((double *)buf)[i]
                                       : (double)((int64_t *)buf)[i];
    free(buf);
    free(rows);
    return out;
}

/* ---- loading ---- */

static void test_boston_load(void) {
    Spec s;
    boston(&s, FL_DT_FLOAT32, false);
    FlErr e = {{0}};
    FlDataSource *src;
    CU_ASSERT_FATAL(fl_data_source_load(&s.spec, NULL, &src, &e) == FL_OK);
    CU_ASSERT_EQUAL(fl_data_source_rows(src), 506);
    FlDataset *ds;
    CU_ASSERT_FATAL(fl_data_whole(src, &ds, &e) == FL_OK);
    fl_data_source_free(src);
    CU_ASSERT_EQUAL(fl_data_rows(ds), 506);
    CU_ASSERT_EQUAL(fl_data_feed_count(ds), 2);
    CU_ASSERT_EQUAL(fl_data_feed_find(ds, "x"), 0);
    CU_ASSERT_EQUAL(fl_data_feed_find(ds, "y"), 1);
    CU_ASSERT_EQUAL(fl_data_feed_find(ds, "z"), -1);
    CU_ASSERT_STRING_EQUAL(fl_data_feed_name(ds, 1), "y");
    CU_ASSERT_EQUAL(fl_data_feed_cols(ds, 0), 13);
    CU_ASSERT_EQUAL(fl_data_feed_cols(ds, 1), 1);
    CU_ASSERT_EQUAL(fl_data_feed_dtype(ds, 0), FL_DT_FLOAT32);
    CU_ASSERT_FALSE(fl_data_feed_is_label(ds, 0));
    CU_ASSERT_TRUE(fl_data_feed_is_label(ds, 1));
    const double *m, *sd;
    CU_ASSERT_FALSE(fl_data_feed_stats(ds, 0, &m, &sd));
    float x[2 * 13], y[2];
    size_t rows[2] = {0, 505};
    fl_data_fill_rows(ds, 0, rows, 2, x, sizeof x);
    fl_data_fill_rows(ds, 1, rows, 2, y, sizeof y);
    /* 0.00632,18,2.31,0,0.538,6.575,65.2,4.09,1,296,15.3,396.9,4.98,24 */
    const float first[13] = {0.00632f, 18, 2.31f, 0, 0.538f, 6.575f, 65.2f,
                             4.09f,    1,  296,   15.3f, 396.9f, 4.98f};
    for (int c = 0; c < 13; c++) CU_ASSERT_EQUAL(x[c], first[c]);
    CU_ASSERT_EQUAL(y[0], 24.0f);
    CU_ASSERT_EQUAL(x[13], 0.04741f); /* the last row: 0.04741,0,11.93,...,7.88,11.9 */
    CU_ASSERT_EQUAL(x[25], 7.88f);
    CU_ASSERT_EQUAL(y[1], 11.9f);
    CU_ASSERT_EQUAL(fl_data_row_origin(ds, 505), 505);
    fl_data_free(ds);
}

static void test_digits_load(void) {
    Spec s;
    digits(&s, false);
    FlDataset *ds = open_ok(&s.spec);
    CU_ASSERT_EQUAL(fl_data_rows(ds), 1797);
    CU_ASSERT_EQUAL(fl_data_feed_cols(ds, 0), 64);
    CU_ASSERT_EQUAL(fl_data_feed_dtype(ds, 1), FL_DT_INT64);
    int64_t label[3];
    float img[3 * 64];
    size_t rows[3] = {0, 1, 1796};
    fl_data_fill_rows(ds, 1, rows, 3, label, sizeof label);
    fl_data_fill_rows(ds, 0, rows, 3, img, sizeof img);
    CU_ASSERT_EQUAL(label[0], 0);
    CU_ASSERT_EQUAL(label[1], 1);
    CU_ASSERT_EQUAL(label[2], 8);
    CU_ASSERT_EQUAL(img[2], 5.0f); /* 0,0,5,13,9,1,... */
    CU_ASSERT_EQUAL(img[3], 13.0f);
    CU_ASSERT_EQUAL(img[64 + 3], 12.0f); /* 0,0,0,12,13,5,... */
    fl_data_free(ds);
}

static void test_skip_rows(void) {
    Spec s;
    boston(&s, FL_DT_FLOAT32, false);
    s.spec.skip_rows = 3;
    FlDataset *ds = open_ok(&s.spec);
    CU_ASSERT_EQUAL(fl_data_rows(ds), 505);
    float x[13], y;
    size_t row = 0;
    fl_data_fill_rows(ds, 0, &row, 1, x, sizeof x);
    fl_data_fill_rows(ds, 1, &row, 1, &y, sizeof y);
    CU_ASSERT_EQUAL(x[0], 0.02731f); /* the second data row */
    CU_ASSERT_EQUAL(y, 21.6f);
    fl_data_free(ds);
    /* Not skipping the header: line numbers count from the top of the file. */
    s.spec.skip_rows = 0;
    open_fails(&s.spec, NULL, BOSTON ":1:8: empty field (column 2, feed 'x')");
    s.spec.skip_rows = 1;
    open_fails(&s.spec, NULL, BOSTON ":2:1: '\"CRIM\"' is not a number (column 0, feed 'x')");
    s.spec.skip_rows = 600;
    open_fails(&s.spec, NULL, BOSTON ": no data rows after the 600 skipped rows");
    /* A base directory (the .fl file's) resolves relative paths. */
    s.spec.skip_rows = 2;
    s.spec.path = "data/boston_house_prices.csv";
    FlErr e;
    CU_ASSERT_FATAL(fl_data_open(&s.spec, "examples/", &ds, &e) == FL_OK);
    CU_ASSERT_EQUAL(fl_data_rows(ds), 506);
    fl_data_free(ds);
}

static void test_gz_vs_plain(void) {
    /* A plain copy of digits' first 40 rows against the gzip original. */
    char path[512];
    snprintf(path, sizeof path, "%s/digits40.csv", tmpdir);
    gzFile in = gzopen(DIGITS, "rb");
    CU_ASSERT_FATAL(in != NULL);
    FILE *out = fopen(path, "wb");
    char line[4096];
    for (int i = 0; i < 40 && gzgets(in, line, sizeof line); i++) fputs(line, out);
    fclose(out);
    gzclose(in);
    CU_ASSERT_FATAL(ntmp < 64);
    strcpy(tmpfiles[ntmp++], path);

    Spec s;
    digits(&s, true);
    FlDataset *gz = open_ok(&s.spec);
    s.spec.path = path;
    FlDataset *plain = open_ok(&s.spec);
    CU_ASSERT_EQUAL(fl_data_rows(plain), 40);
    for (size_t f = 0; f < 2; f++) {
        double *a = all_values(gz, f), *b = all_values(plain, f);
        CU_ASSERT_EQUAL(memcmp(a, b, 40 * fl_data_feed_cols(gz, f) * sizeof *a), 0);
        free(a);
        free(b);
    }
    fl_data_free(gz);
    fl_data_free(plain);

    /* And the other way: a gzip copy of the housing file (header included) against the plain. */
    snprintf(path, sizeof path, "%s/boston.csv.gz", tmpdir);
    char *text;
    size_t len;
    FlErr e;
    text = fl_read_file(BOSTON, &len, &e);
    CU_ASSERT_FATAL(text != NULL);
    gzFile z = gzopen(path, "wb");
    CU_ASSERT_FATAL(z != NULL);
    CU_ASSERT_EQUAL(gzwrite(z, text, (unsigned)len), (int)len);
    gzclose(z);
    free(text);
    strcpy(tmpfiles[ntmp++], path);
    Spec b;
    boston(&b, FL_DT_FLOAT64, true);
    FlDataset *p1 = open_ok(&b.spec);
    b.spec.path = path;
    FlDataset *p2 = open_ok(&b.spec);
    CU_ASSERT_EQUAL(fl_data_rows(p2), 506);
    double *a = all_values(p1, 0), *c = all_values(p2, 0);
    CU_ASSERT_EQUAL(memcmp(a, c, 506 * 13 * sizeof *a), 0);
    free(a);
    free(c);
    fl_data_free(p1);
    fl_data_free(p2);
}

/* ---- split ---- */

static void origins(const FlDataset *ds, size_t *out) {
    for (size_t i = 0; i < fl_data_rows(ds); i++) out[i] = fl_data_row_origin(ds, i);
}

static void test_split(void) {
    Spec s;
    boston(&s, FL_DT_FLOAT32, false);
    FlErr e;
    FlDataSource *src;
    CU_ASSERT_FATAL(fl_data_source_load(&s.spec, NULL, &src, &e) == FL_OK);
    FlDataset *tr, *te, *tr2, *te2, *tr3;
    CU_ASSERT_FATAL(fl_data_split(src, 0.8, 1, &tr, &te, &e) == FL_OK);
    CU_ASSERT_EQUAL(fl_data_rows(tr), 405); /* round(404.8) */
    CU_ASSERT_EQUAL(fl_data_rows(te), 101);
    /* Disjoint, together every row, each part in file order. */
    int seen[506] = {0};
    size_t a[506], b[506], c[506];
    origins(tr, a);
    origins(te, b);
    for (size_t i = 0; i < 405; i++) seen[a[i]]++;
    for (size_t i = 0; i < 101; i++) seen[b[i]]++;
    for (size_t i = 0; i < 506; i++) CU_ASSERT_EQUAL(seen[i], 1);
    for (size_t i = 1; i < 405; i++) CU_ASSERT(a[i - 1] < a[i]);
    for (size_t i = 1; i < 101; i++) CU_ASSERT(b[i - 1] < b[i]);
    /* Pinned: io.split(data, 0.8, seed=1) on the housing file, on every machine. */
    CU_ASSERT_EQUAL(b[0], 2);
    CU_ASSERT_EQUAL(b[1], 15);
    CU_ASSERT_EQUAL(b[2], 18);
    /* The same seed gives the same split; another seed another. */
    CU_ASSERT_FATAL(fl_data_split(src, 0.8, 1, &tr2, &te2, &e) == FL_OK);
    origins(tr2, c);
    CU_ASSERT_EQUAL(memcmp(a, c, sizeof a[0] * 405), 0);
    CU_ASSERT_FATAL(fl_data_split(src, 0.8, 2, &tr3, NULL, &e) == FL_OK);
    origins(tr3, c);
    CU_ASSERT_NOT_EQUAL(memcmp(a, c, sizeof a[0] * 405), 0);
    /* fl_data_open picks the same parts. */
    s.spec.part = FL_DATA_TEST;
    s.spec.split_fraction = 0.8;
    s.spec.split_seed = 1;
    FlDataset *te3 = open_ok(&s.spec);
    origins(te3, c);
    CU_ASSERT_EQUAL(fl_data_rows(te3), 101);
    CU_ASSERT_EQUAL(memcmp(b, c, sizeof b[0] * 101), 0);
    /* Bad fractions. */
    FlDataset *x = NULL;
    CU_ASSERT_EQUAL(fl_data_split(src, 1.0, 1, &x, NULL, &e), FL_ERROR);
    CU_ASSERT_STRING_EQUAL(e.msg, "io.split: the fraction must be between 0 and 1 (exclusive), not 1");
    CU_ASSERT_EQUAL(fl_data_split(src, 0.0001, 1, &x, NULL, &e), FL_ERROR);
    CU_ASSERT_STRING_EQUAL(e.msg,
                           "io.split: a fraction of 0.0001 of 506 rows leaves the training part empty");
    CU_ASSERT_PTR_NULL(x);
    fl_data_free(tr);
    fl_data_free(te);
    fl_data_free(tr2);
    fl_data_free(te2);
    fl_data_free(tr3);
    fl_data_free(te3);
    fl_data_source_free(src);

    Spec d;
    digits(&d, false);
    d.spec.part = FL_DATA_TRAIN;
    d.spec.split_fraction = 0.8;
    d.spec.split_seed = 1;
    FlDataset *dtr = open_ok(&d.spec);
    CU_ASSERT_EQUAL(fl_data_rows(dtr), 1438); /* round(1437.6) */
    fl_data_free(dtr);
    d.spec.part = FL_DATA_TEST;
    FlDataset *dte = open_ok(&d.spec);
    CU_ASSERT_EQUAL(fl_data_rows(dte), 359);
    fl_data_free(dte);
}

/* ---- normalisation and scaling ---- */

static void test_normalize(void) {
    Spec raw, nrm;
    boston(&raw, FL_DT_FLOAT64, false);
    boston(&nrm, FL_DT_FLOAT64, true);
    FlErr e;
    FlDataset *all = open_ok(&raw.spec); /* raw values; origin i is row i */
    FlDataSource *src;
    CU_ASSERT_FATAL(fl_data_source_load(&nrm.spec, NULL, &src, &e) == FL_OK);
    FlDataset *tr, *te;
    CU_ASSERT_FATAL(fl_data_split(src, 0.8, 1, &tr, &te, &e) == FL_OK);
    fl_data_source_free(src);
    double *rx = all_values(all, 0), *ry = all_values(all, 1);
    double *tx = all_values(tr, 0), *ex = all_values(te, 0), *ey = all_values(te, 1);
    size_t ntr = fl_data_rows(tr), nte = fl_data_rows(te);
    const double *m, *sd;
    CU_ASSERT_FATAL(fl_data_feed_stats(tr, 0, &m, &sd));
    CU_ASSERT_FALSE(fl_data_feed_stats(tr, 1, &m, &sd));
    CU_ASSERT_FATAL(fl_data_feed_stats(te, 0, &m, &sd));
    for (size_t c = 0; c < 13; c++) {
        /* The training part's columns: mean 0, (population) std 1. */
        double sum = 0, sq = 0;
        for (size_t i = 0; i < ntr; i++) sum += tx[i * 13 + c];
        for (size_t i = 0; i < ntr; i++) sq += tx[i * 13 + c] * tx[i * 13 + c];
        CU_ASSERT_DOUBLE_EQUAL(sum / ntr, 0.0, 1e-9);
        CU_ASSERT_DOUBLE_EQUAL(sqrt(sq / ntr), 1.0, 1e-9);
        /* The training part's statistics from the raw values ... */
        double rm = 0, rs = 0;
        for (size_t i = 0; i < ntr; i++) rm += rx[fl_data_row_origin(tr, i) * 13 + c];
        rm /= ntr;
        for (size_t i = 0; i < ntr; i++) {
            double d = rx[fl_data_row_origin(tr, i) * 13 + c] - rm;
            rs += d * d;
        }
        rs = sqrt(rs / ntr);
        CU_ASSERT_DOUBLE_EQUAL(m[c], rm, 1e-9 * fabs(rm) + 1e-12);
        CU_ASSERT_DOUBLE_EQUAL(sd[c], rs, 1e-9 * rs);
        /* ... are what the test part uses. */
        for (size_t i = 0; i < nte; i++) {
            double want = (rx[fl_data_row_origin(te, i) * 13 + c] - rm) / rs;
            CU_ASSERT_DOUBLE_EQUAL(ex[i * 13 + c], want, 1e-9);
        }
    }
    for (size_t i = 0; i < nte; i++) CU_ASSERT_EQUAL(ey[i], ry[fl_data_row_origin(te, i)]);
    free(rx);
    free(ry);
    free(tx);
    free(ex);
    free(ey);
    fl_data_free(all);
    fl_data_free(tr);
    fl_data_free(te);

    /* float32 output is the same values rounded. */
    boston(&nrm, FL_DT_FLOAT32, true);
    nrm.spec.part = FL_DATA_TRAIN;
    nrm.spec.split_fraction = 0.8;
    nrm.spec.split_seed = 1;
    FlDataset *t32 = open_ok(&nrm.spec);
    double *v = all_values(t32, 0);
    for (size_t c = 0; c < 13; c++) {
        double sum = 0;
        for (size_t i = 0; i < 405; i++) sum += v[i * 13 + c];
        CU_ASSERT_DOUBLE_EQUAL(sum / 405, 0.0, 1e-6);
    }
    free(v);
    fl_data_free(t32);

    /* A constant column (std 0) is only centred. */
    static const size_t cols[2] = {0, 1};
    FlDataFeed f = {.name = "a", .cols = cols, .ncols = 2, .dtype = FL_DT_FLOAT64, .normalize = true};
    FlDataSpec spec = {.path = tmp_write("const.csv", "0.1,1\n0.1,2\n0.1,3\n"), .feeds = &f, .nfeeds = 1};
    FlDataset *ds = open_ok(&spec);
    double *w = all_values(ds, 0);
    for (int i = 0; i < 3; i++) CU_ASSERT_DOUBLE_EQUAL(w[i * 2], 0.0, 1e-15);
    CU_ASSERT_DOUBLE_EQUAL(w[1], -sqrt(1.5), 1e-12);
    CU_ASSERT_FATAL(fl_data_feed_stats(ds, 0, &m, &sd));
    CU_ASSERT_EQUAL(sd[0], 0.0);
    CU_ASSERT_DOUBLE_EQUAL(m[1], 2.0, 1e-15);
    free(w);
    fl_data_free(ds);
}

static void test_scale(void) {
    Spec s;
    digits(&s, false);
    FlDataset *raw = open_ok(&s.spec);
    digits(&s, true);
    FlDataset *sc = open_ok(&s.spec);
    double *a = all_values(raw, 0), *b = all_values(sc, 0);
    size_t bad = 0;
    for (size_t i = 0; i < 1797 * 64; i++) bad += b[i] != (double)(float)(a[i] / 16);
    CU_ASSERT_EQUAL(bad, 0);
    free(a);
    free(b);
    fl_data_free(raw);
    fl_data_free(sc);

    /* Normalising then scaling: twice the normalised value. */
    Spec n1, n2;
    boston(&n1, FL_DT_FLOAT64, true);
    boston(&n2, FL_DT_FLOAT64, true);
    n2.feeds[0].has_scale = true;
    n2.feeds[0].scale = 2;
    FlDataset *d1 = open_ok(&n1.spec), *d2 = open_ok(&n2.spec);
    double *x1 = all_values(d1, 0), *x2 = all_values(d2, 0);
    for (size_t i = 0; i < 506 * 13; i++) CU_ASSERT_DOUBLE_EQUAL(x2[i], 2 * x1[i], 1e-12);
    free(x1);
    free(x2);
    fl_data_free(d1);
    fl_data_free(d2);
}

/* ---- epochs ---- */

static bool is_permutation(const size_t *order, size_t n) {
    char *seen = calloc(n ? n : 1, 1);
    bool ok = true;
    for (size_t i = 0; i < n; i++) {
        if (order[i] >= n || seen[order[i]]) ok = false;
        else seen[order[i]] = 1;
    }
    free(seen);
    return ok;
}

static void test_shuffle(void) {
    Spec s;
    digits(&s, true);
    FlDataset *ds = open_ok(&s.spec);
    size_t n = fl_data_rows(ds);
    FlErr e;
    FlDataEpoch *a, *b, *c, *d, *id;
    CU_ASSERT_FATAL(fl_data_epoch_new(ds, 64, 1, true, 7, 0, &a, &e) == FL_OK);
    CU_ASSERT_FATAL(fl_data_epoch_new(ds, 64, 1, true, 7, 0, &b, &e) == FL_OK);
    CU_ASSERT_FATAL(fl_data_epoch_new(ds, 64, 1, true, 7, 1, &c, &e) == FL_OK);
    CU_ASSERT_FATAL(fl_data_epoch_new(ds, 64, 1, true, 8, 0, &d, &e) == FL_OK);
    CU_ASSERT_FATAL(fl_data_epoch_new(ds, 64, 1, false, 7, 0, &id, &e) == FL_OK);
    const size_t *oa = fl_data_epoch_order(a), *ob = fl_data_epoch_order(b);
    const size_t *oc = fl_data_epoch_order(c), *od = fl_data_epoch_order(d);
    CU_ASSERT_EQUAL(memcmp(oa, ob, n * sizeof *oa), 0);
    CU_ASSERT_NOT_EQUAL(memcmp(oa, oc, n * sizeof *oa), 0);
    CU_ASSERT_NOT_EQUAL(memcmp(oa, od, n * sizeof *oa), 0);
    CU_ASSERT_TRUE(is_permutation(oa, n));
    CU_ASSERT_TRUE(is_permutation(oc, n));
    CU_ASSERT_TRUE(is_permutation(od, n));
    size_t fixed = 0;
    for (size_t i = 0; i < n; i++) fixed += oa[i] == i;
    CU_ASSERT(fixed < 20); /* a shuffle, not the identity (about 1 fixed point expected) */
    for (size_t i = 0; i < n; i++) CU_ASSERT_EQUAL(fl_data_epoch_order(id)[i], i);
    /* Pinned: splitmix64 + Fisher-Yates of (seed 7, epoch 0) must give these on every machine
     * (a change here changes every user's training run). */
    CU_ASSERT_EQUAL(oa[0], 1676);
    CU_ASSERT_EQUAL(oa[1], 1284);
    CU_ASSERT_EQUAL(oa[2], 555);
    fl_data_epoch_free(a);
    fl_data_epoch_free(b);
    fl_data_epoch_free(c);
    fl_data_epoch_free(d);
    fl_data_epoch_free(id);
    fl_data_epoch_free(NULL);
    FlDataEpoch *x = (FlDataEpoch *)1;
    CU_ASSERT_EQUAL(fl_data_epoch_new(ds, 0, 1, true, 7, 0, &x, &e), FL_ERROR);
    CU_ASSERT_STRING_EQUAL(e.msg, "the batch size must be at least 1");
    CU_ASSERT_PTR_NULL(x);
    CU_ASSERT_EQUAL(fl_data_epoch_new(ds, 4, 0, true, 7, 0, &x, &e), FL_ERROR);
    CU_ASSERT_STRING_EQUAL(e.msg, "the number of trainers must be at least 1");
    fl_data_free(ds);
}

static void test_batching(void) {
    Spec s;
    boston(&s, FL_DT_FLOAT32, true);
    FlDataset *ds = open_ok(&s.spec);
    FlErr e;
    FlDataEpoch *ep;
    CU_ASSERT_FATAL(fl_data_epoch_new(ds, 20, 1, true, 3, 2, &ep, &e) == FL_OK);
    CU_ASSERT_EQUAL(fl_data_epoch_batches(ep), 26);
    const size_t *order = fl_data_epoch_order(ep);
    size_t total = 0;
    for (size_t i = 0; i < 26; i++) {
        size_t rows = fl_data_epoch_batch_rows(ep, i);
        CU_ASSERT_EQUAL(rows, i < 25 ? 20 : 6);
        CU_ASSERT_EQUAL(fl_data_epoch_share_rows(ep, i, 0), rows);
        float x[20 * 13], want[20 * 13], y[20], wy[20];
        fl_data_epoch_fill(ep, i, 0, 0, x, sizeof x);
        fl_data_epoch_fill(ep, i, 0, 1, y, sizeof y);
        fl_data_fill_rows(ds, 0, order + total, rows, want, sizeof want);
        fl_data_fill_rows(ds, 1, order + total, rows, wy, sizeof wy);
        CU_ASSERT_EQUAL(memcmp(x, want, rows * 13 * sizeof *x), 0);
        CU_ASSERT_EQUAL(memcmp(y, wy, rows * sizeof *y), 0);
        total += rows;
    }
    CU_ASSERT_EQUAL(total, 506);
    fl_data_epoch_free(ep);
    /* A batch larger than the dataset: one partial batch. */
    CU_ASSERT_FATAL(fl_data_epoch_new(ds, 1000, 1, false, 0, 0, &ep, &e) == FL_OK);
    CU_ASSERT_EQUAL(fl_data_epoch_batches(ep), 1);
    CU_ASSERT_EQUAL(fl_data_epoch_batch_rows(ep, 0), 506);
    fl_data_epoch_free(ep);
    fl_data_free(ds);
}

/* Trainer shares of a global batch of G rows over T trainers (fl_data_epoch_new_global) against
 * plain batching with batch G: the same rows, shares summing to the global batch; `whole` is the
 * expected shares of a whole global batch, `last` of the last one. */
static void check_global_shares(const FlDataset *ds, size_t G, size_t T, size_t nbatches, const size_t *whole,
                                const size_t *last) {
    FlErr e;
    FlDataEpoch *ep, *g;
    CU_ASSERT_FATAL(fl_data_epoch_new_global(ds, G, T, true, 11, 4, &ep, &e) == FL_OK);
    CU_ASSERT_FATAL(fl_data_epoch_new(ds, G, 1, true, 11, 4, &g, &e) == FL_OK);
    CU_ASSERT_EQUAL(fl_data_epoch_batches(ep), nbatches);
    size_t nc = fl_data_feed_cols(ds, 0);
    float *want = calloc(G * nc, sizeof *want), *got = calloc(G * nc, sizeof *got);
    for (size_t i = 0; i < nbatches; i++) {
        size_t rows = fl_data_epoch_batch_rows(ep, i), sum = 0;
        fl_data_epoch_fill(g, i, 0, 0, want, G * nc * sizeof *want);
        for (size_t t = 0; t < T; t++) {
            size_t n = fl_data_epoch_share_rows(ep, i, t);
            CU_ASSERT_EQUAL(n, i == nbatches - 1 ? last[t] : whole[t]);
            fl_data_epoch_fill(ep, i, t, 0, got + sum * nc, (G - sum) * nc * sizeof *got);
            sum += n;
        }
        CU_ASSERT_EQUAL(sum, rows);
        CU_ASSERT_EQUAL(memcmp(got, want, rows * nc * sizeof *got), 0);
    }
    free(want);
    free(got);
    fl_data_epoch_free(ep);
    fl_data_epoch_free(g);
}

/* Trainer shares of (b, T) against plain batching with batch T*b: the same rows, shares summing
 * to the global batch; `last` is the expected shares of the last global batch. */
static void check_shares(const FlDataset *ds, size_t b, size_t T, size_t nbatches,
                         const size_t *last) {
    FlErr e;
    FlDataEpoch *ep, *g;
    CU_ASSERT_FATAL(fl_data_epoch_new(ds, b, T, true, 11, 4, &ep, &e) == FL_OK);
    CU_ASSERT_FATAL(fl_data_epoch_new(ds, T * b, 1, true, 11, 4, &g, &e) == FL_OK);
    CU_ASSERT_EQUAL(fl_data_epoch_batches(ep), nbatches);
    CU_ASSERT_EQUAL(fl_data_epoch_batches(g), nbatches);
    size_t nc = fl_data_feed_cols(ds, 0);
    float *want = calloc(T * b * nc, sizeof *want), *got = calloc(T * b * nc, sizeof *got);
    float *share = calloc(b * nc, sizeof *share);
    size_t total = 0;
    for (size_t i = 0; i < nbatches; i++) {
        size_t rows = fl_data_epoch_batch_rows(ep, i), sum = 0;
        CU_ASSERT_EQUAL(rows, fl_data_epoch_batch_rows(g, i));
        fl_data_epoch_fill(g, i, 0, 0, want, T * b * nc * sizeof *want);
        for (size_t t = 0; t < T; t++) {
            size_t n = fl_data_epoch_share_rows(ep, i, t);
            if (i == nbatches - 1) CU_ASSERT_EQUAL(n, last[t]);
            if (i < nbatches - 1) CU_ASSERT_EQUAL(n, b);
            memset(share, 0xff, b * nc * sizeof *share);
            fl_data_epoch_fill(ep, i, t, 0, share, b * nc * sizeof *share);
            memcpy(got + sum * nc, share, n * nc * sizeof *share);
            sum += n;
        }
        CU_ASSERT_EQUAL(sum, rows);
        CU_ASSERT_EQUAL(memcmp(got, want, rows * nc * sizeof *got), 0);
        total += rows;
    }
    CU_ASSERT_EQUAL(total, fl_data_rows(ds));
    free(want);
    free(got);
    free(share);
    fl_data_epoch_free(ep);
    fl_data_epoch_free(g);
}

static void test_trainer_shares(void) {
    Spec s;
    boston(&s, FL_DT_FLOAT32, true);
    s.spec.part = FL_DATA_TRAIN;
    s.spec.split_fraction = 0.8;
    s.spec.split_seed = 1;
    FlDataset *ds = open_ok(&s.spec); /* 405 rows */
    check_shares(ds, 20, 1, 21, (const size_t[]){5});
    check_shares(ds, 20, 2, 11, (const size_t[]){5, 0});         /* 10 x 40, then 5 */
    check_shares(ds, 20, 3, 7, (const size_t[]){20, 20, 5});     /* 6 x 60, then 45 */
    check_shares(ds, 64, 3, 3, (const size_t[]){21, 0, 0});      /* 2 x 192, then 21 */
    check_shares(ds, 45, 3, 3, (const size_t[]){45, 45, 45});    /* 405 = 3 x 135 exactly */
    check_shares(ds, 100, 3, 2, (const size_t[]){100, 5, 0});    /* 300, then 105 */
    /* a global batch that the trainers do not divide (a job of fewer trainers than its plan's,
     * keeping the plan's global batch): shares of 34, 33, 33; 405 = 4 x 100 + 5 */
    check_global_shares(ds, 100, 3, 5, (const size_t[]){34, 33, 33}, (const size_t[]){5, 0, 0});
    check_global_shares(ds, 100, 1, 5, (const size_t[]){100}, (const size_t[]){5});
    check_global_shares(ds, 60, 4, 7, (const size_t[]){15, 15, 15, 15}, (const size_t[]){15, 15, 15, 0});
    FlErr e;
    FlDataEpoch *none;
    CU_ASSERT_EQUAL(fl_data_epoch_new_global(ds, 0, 2, true, 1, 0, &none, &e), FL_ERROR);
    CU_ASSERT_STRING_EQUAL(e.msg, "the global batch must hold at least 1 row");
    fl_data_free(ds);
}

/* ---- prediction input ---- */

static void test_predict(void) {
    Spec s;
    boston(&s, FL_DT_FLOAT32, true);
    s.spec.part = FL_DATA_TRAIN;
    s.spec.split_fraction = 0.8;
    s.spec.split_seed = 1;
    FlDataset *tr = open_ok(&s.spec);
    Spec r;
    boston(&r, FL_DT_FLOAT64, false);
    FlDataset *raw = open_ok(&r.spec);
    double *rx = all_values(raw, 0);
    const double *m, *sd;
    CU_ASSERT_FATAL(fl_data_feed_stats(tr, 0, &m, &sd));
    /* Features only (13 columns), and the full rows with the label column (ignored). */
    const char *feat = tmp_write("predict.csv",
                                 "0.00632,18,2.31,0,0.538,6.575,65.2,4.09,1,296,15.3,396.9,4.98\n"
                                 "0.02731,0,7.07,0,0.469,6.421,78.9,4.9671,2,242,17.8,396.9,9.14\n");
    const char *full = tmp_write("predict_full.csv",
                                 "h1\nh2\n"
                                 "0.00632,18,2.31,0,0.538,6.575,65.2,4.09,1,296,15.3,396.9,4.98,24\n"
                                 "0.02731,0,7.07,0,0.469,6.421,78.9,4.9671,2,242,17.8,396.9,9.14,21.6\n");
    FlErr e;
    FlDataset *p1, *p2;
    CU_ASSERT_FATAL(fl_data_predict_load(tr, feat, 0, 0, &p1, &e) == FL_OK);
    CU_ASSERT_FATAL(fl_data_predict_load(tr, full, 2, ',', &p2, &e) == FL_OK);
    CU_ASSERT_EQUAL(fl_data_feed_count(p1), 1);
    CU_ASSERT_EQUAL(fl_data_feed_find(p1, "y"), -1);
    CU_ASSERT_EQUAL(fl_data_feed_find(p1, "x"), 0);
    CU_ASSERT_EQUAL(fl_data_rows(p1), 2);
    double *a = all_values(p1, 0), *b = all_values(p2, 0);
    for (size_t i = 0; i < 2; i++)
        for (size_t c = 0; c < 13; c++) {
            double want = (float)((rx[i * 13 + c] - m[c]) / sd[c]);
            CU_ASSERT_DOUBLE_EQUAL(a[i * 13 + c], want, 1e-6);
            CU_ASSERT_EQUAL(a[i * 13 + c], b[i * 13 + c]);
        }
    const double *pm, *psd;
    CU_ASSERT_FATAL(fl_data_feed_stats(p1, 0, &pm, &psd));
    CU_ASSERT_EQUAL(memcmp(pm, m, 13 * sizeof *m), 0);
    free(a);
    free(b);
    fl_data_free(p1);
    fl_data_free(p2);
    /* Errors name the prediction file. */
    const char *bad = tmp_write("predict_bad.csv", "1,2,3\n");
    char want[1024];
    snprintf(want, sizeof want, "%s:1: feed 'x' uses column 3, but the rows have 3 columns", bad);
    FlDataset *p3 = (FlDataset *)1;
    CU_ASSERT_EQUAL(fl_data_predict_load(tr, bad, 0, 0, &p3, &e), FL_ERROR);
    CU_ASSERT_STRING_EQUAL(e.msg, want);
    CU_ASSERT_PTR_NULL(p3);
    free(rx);
    fl_data_free(raw);
    fl_data_free(tr);
}

/* ---- errors ---- */

static const size_t COLS3[3] = {0, 1, 2};
static const size_t COL2[1] = {2};

/* A spec over a temporary file: feed 'a' = columns 0..2 float32 (or 0..1 with a label 'label' =
 * column 2 int64). */
static void tmp_spec(Spec *s, const char *name, const char *text, bool with_label) {
    memset(s, 0, sizeof *s);
    s->feeds[0] = (FlDataFeed){.name = "a", .cols = COLS3, .ncols = with_label ? 2 : 3,
                               .dtype = FL_DT_FLOAT32};
    s->feeds[1] = (FlDataFeed){.name = "label", .cols = COL2, .ncols = 1, .dtype = FL_DT_INT64,
                               .label = true};
    s->spec = (FlDataSpec){.path = tmp_write(name, text), .feeds = s->feeds,
                           .nfeeds = with_label ? 2 : 1};
}

static void expect_error(const Spec *s, const char *fmt_after_path) {
    char want[1024];
    snprintf(want, sizeof want, "%s%s", s->spec.path, fmt_after_path);
    open_fails(&s->spec, NULL, want);
}

static void test_errors(void) {
    Spec s;
    tmp_spec(&s, "short.csv", "1,2,3\n4,5\n", false);
    expect_error(&s, ":2: expected 3 columns, found 2");
    tmp_spec(&s, "long.csv", "1,2,3\n4,5,6\n7,8,9,10\n", false);
    expect_error(&s, ":3: expected 3 columns, found 4");
    tmp_spec(&s, "abc.csv", "1,2,3\n4,abc,6\n", false);
    expect_error(&s, ":2:3: 'abc' is not a number (column 1, feed 'a')");
    tmp_spec(&s, "trail.csv", "1,2,3\n4,5x,6\n", false);
    expect_error(&s, ":2:3: '5x' is not a number (column 1, feed 'a')");
    tmp_spec(&s, "empty.csv", "1,2,3\n4,,6\n", false);
    expect_error(&s, ":2:3: empty field (column 1, feed 'a')");
    tmp_spec(&s, "blank.csv", "1,2,3\n4,  ,6\n", false);
    expect_error(&s, ":2:3: empty field (column 1, feed 'a')");
    tmp_spec(&s, "nan.csv", "1,2,nan\n", false);
    expect_error(&s, ":1:5: 'nan' is not a number (column 2, feed 'a')");
    tmp_spec(&s, "inf.csv", "1,2,1e999\n", false);
    expect_error(&s, ":1:5: '1e999' is out of range (column 2, feed 'a')");
    tmp_spec(&s, "label.csv", "1,2,0\n1,2,3.5\n", true);
    expect_error(&s, ":2:5: '3.5' is not an integer (column 2, feed 'label' is int64)");
    tmp_spec(&s, "label2.csv", "1,2,1e30\n", true);
    expect_error(&s, ":1:5: '1e30' is out of range (column 2, feed 'label' is int64)");
    /* Skipped rows count in line numbers. */
    tmp_spec(&s, "skip.csv", "a,b,c\n\n1,2,3\n4,x,6\n", false);
    s.spec.skip_rows = 1;
    expect_error(&s, ":4:3: 'x' is not a number (column 1, feed 'a')");
    tmp_spec(&s, "nodata.csv", "", false);
    expect_error(&s, ": no data rows");
    tmp_spec(&s, "fake.csv.gz", "1,2,3\n", false);
    expect_error(&s, ": not a gzip file (the name ends in .gz)");

    /* Missing files name the path (resolved against the base directory) and strerror. */
    Spec b;
    boston(&b, FL_DT_FLOAT32, false);
    b.spec.path = "data/nope.csv";
    open_fails(&b.spec, "examples", "cannot open 'examples/data/nope.csv': No such file or directory");
    b.spec.path = "examples/data/nope.csv.gz";
    open_fails(&b.spec, NULL, "cannot open 'examples/data/nope.csv.gz': No such file or directory");
    b.spec.path = "examples/data";
    open_fails(&b.spec, NULL, "cannot read 'examples/data': Is a directory");
    /* A column past the row's end. */
    boston(&b, FL_DT_FLOAT32, false);
    static const size_t c20[1] = {20};
    b.feeds[1].cols = c20;
    open_fails(&b.spec, NULL, BOSTON ":3: feed 'y' uses column 20, but the rows have 14 columns");
    /* Descriptions that make no sense. */
    boston(&b, FL_DT_FLOAT32, false);
    b.feeds[1].name = "x";
    open_fails(&b.spec, NULL, "io.csv: feed 'x' is given twice");
    digits(&b, false);
    b.feeds[1].normalize = true;
    open_fails(&b.spec, NULL, "io.csv: feed 'label' is int64 and cannot be normalised");
    digits(&b, false);
    b.feeds[1].dtype = FL_DT_BOOL;
    open_fails(&b.spec, NULL, "io.csv: feed 'label' has dtype bool; expected float32, float64, int32 or int64");
    digits(&b, false);
    b.feeds[0].ncols = 0;
    open_fails(&b.spec, NULL, "io.csv: feed 'img' has no columns");
}

static void test_lenient_syntax(void) {
    /* CRLF line ends, blanks around fields, blank lines, no final line break, other separators,
     * exact int64 beyond 2^53, integral floats for int64. */
    Spec s;
    tmp_spec(&s, "crlf.csv", "1, 2 ,\t7\r\n\r\n  \n3;4,4 , 9007199254740993\r\n-5,6e1,1e3", true);
    s.spec.part = FL_DATA_ALL;
    FlErr e;
    FlDataset *ds = NULL;
    CU_ASSERT_EQUAL(fl_data_open(&s.spec, NULL, &ds, &e), FL_ERROR); /* '3;4' */
    tmp_spec(&s, "crlf2.csv", "1, 2 ,\t7\r\n\r\n  \n3.5,4 , 9007199254740993\r\n-5,6e1,1e3", true);
    ds = open_ok(&s.spec);
    CU_ASSERT_EQUAL(fl_data_rows(ds), 3);
    float a[6];
    int64_t l[3];
    size_t rows[3] = {0, 1, 2};
    fl_data_fill_rows(ds, 0, rows, 3, a, sizeof a);
    fl_data_fill_rows(ds, 1, rows, 3, l, sizeof l);
    CU_ASSERT_EQUAL(a[0], 1.0f);
    CU_ASSERT_EQUAL(a[1], 2.0f);
    CU_ASSERT_EQUAL(a[2], 3.5f);
    CU_ASSERT_EQUAL(a[4], -5.0f);
    CU_ASSERT_EQUAL(a[5], 60.0f);
    CU_ASSERT_EQUAL(l[0], 7);
    CU_ASSERT_EQUAL(l[1], INT64_C(9007199254740993));
    CU_ASSERT_EQUAL(l[2], 1000);
    fl_data_free(ds);
    tmp_spec(&s, "semi.csv", "1;2;3\n4;5;6\n", false);
    s.spec.sep = ';';
    ds = open_ok(&s.spec);
    CU_ASSERT_EQUAL(fl_data_rows(ds), 2);
    fl_data_free(ds);
}

/* The reader's fast path for plain decimals (data.c, fast_decimal) gives strtod's bits: one
 * float64 column of seeded random decimals of 1 to 19 digits and 0 to 22 after the point,
 * signs, leading zeros, and forms the fast path leaves to strtod (exponents, more than 19
 * digits, m > 2^53, "1.", ".5", hex). */
static void test_fast_decimals_match_strtod(void) {
    enum { N = 4000 };
    static const char *fixed[] = {"0", "-0", "-0.0", "+7", "1.", ".5", "-.25", "007.100",
                                  "9007199254740993", "9007199254740992.5",
                                  "0.1000000000000000055511151231257827",
                                  "12345678901234567890", "1e-3", "2.5E2", "0x1p4",
                                  "0.0000000000000000000001", "123.4567890123456789",
                                  "3.14159265358979323846", "-999999999999999999.9"};
    size_t nfixed = sizeof fixed / sizeof fixed[0];
    char *text = malloc((size_t)N * 40 + 1), *p = text;
    static char fields[N][40];
    uint64_t x = 88172645463325252ull;
    for (size_t i = 0; i < N; i++) {
        if (i < nfixed) {
            snprintf(fields[i], sizeof fields[i], "%s", fixed[i]);
        } else {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            int digits = 1 + (int)(x % 19), frac = (int)((x >> 8) % (uint64_t)(digits + 1));
            char *q = fields[i];
            if ((x >> 16) & 1) *q++ = '-';
            if (frac == digits) *q++ = '0'; /* "0.xyz": one more digit, as in "%.3f" */
            for (int d = 0; d < digits; d++) {
                if (d == digits - frac) *q++ = '.';
                x ^= x << 13, x ^= x >> 7, x ^= x << 17;
                *q++ = (char)('0' + x % 10);
            }
            *q = 0;
        }
        p += sprintf(p, "%s\n", fields[i]);
    }
    static const size_t col0[1] = {0};
    FlDataFeed feed = {.name = "v", .cols = col0, .ncols = 1, .dtype = FL_DT_FLOAT64};
    FlDataSpec spec = {.path = tmp_write("decimals.csv", text), .feeds = &feed, .nfeeds = 1};
    free(text);
    FlDataset *ds = open_ok(&spec);
    CU_ASSERT_EQUAL_FATAL(fl_data_rows(ds), N);
    double *v = all_values(ds, 0);
    int bad = 0;
    for (size_t i = 0; i < N; i++) {
        double want = strtod(fields[i], NULL);
        if (memcmp(&want, &v[i], sizeof want) != 0 && bad++ < 5)
            fprintf(stderr, "\n'%s': %.17g, strtod %.17g\n", fields[i], v[i], want);
    }
    CU_ASSERT_EQUAL(bad, 0);
    free(v);
    fl_data_free(ds);
}

static void test_long_lines_and_truncated_gz(void) {
    /* Lines far longer than the reader's first buffer (4096 bytes). */
    enum { NC = 3000 };
    static size_t cols[NC];
    for (size_t i = 0; i < NC; i++) cols[i] = i;
    FlBuf text = {0};
    for (int r = 0; r < 3; r++)
        for (size_t c = 0; c < NC; c++) fl_buf_printf(&text, "%d.25%c", r, c + 1 < NC ? ',' : '\n');
    FlDataFeed f = {.name = "wide", .cols = cols, .ncols = NC, .dtype = FL_DT_FLOAT64};
    FlDataSpec spec = {.path = tmp_write("wide.csv", fl_buf_str(&text)), .feeds = &f, .nfeeds = 1};
    FlDataset *ds = open_ok(&spec);
    CU_ASSERT_EQUAL(fl_data_rows(ds), 3);
    double *v = all_values(ds, 0);
    CU_ASSERT_EQUAL(v[0], 0.25);
    CU_ASSERT_EQUAL(v[NC - 1], 0.25);
    CU_ASSERT_EQUAL(v[2 * NC + NC - 1], 2.25);
    free(v);
    fl_data_free(ds);

    /* A gzip file cut short is a read error, not a short dataset. */
    char path[512];
    snprintf(path, sizeof path, "%s/cut.csv.gz", tmpdir);
    gzFile z = gzopen(path, "wb");
    CU_ASSERT_FATAL(z != NULL);
    gzwrite(z, text.data, (unsigned)text.len);
    gzclose(z);
    strcpy(tmpfiles[ntmp++], path);
    size_t len;
    FlErr e;
    char *bytes = fl_read_file(path, &len, &e);
    CU_ASSERT_FATAL(bytes != NULL);
    CU_ASSERT_EQUAL(fl_write_file(path, bytes, len / 2, &e), FL_OK);
    free(bytes);
    fl_buf_free(&text);
    spec.path = path;
    char want[1024];
    snprintf(want, sizeof want, "cannot read '%s': unexpected end of file", path);
    open_fails(&spec, NULL, want);
}

/* ---- sequence feeds ---- */

static const size_t COL0[1] = {0};
static const size_t COL1[1] = {1};

/* A spec over a temporary file: 'words' = the sequence in column 0 (levels, dtype) and 'label' =
 * column 1, int64. */
static void seq_spec(Spec *s, const char *name, const char *text, int levels, FlDType dt) {
    memset(s, 0, sizeof *s);
    s->feeds[0] = (FlDataFeed){.name = "words", .cols = COL0, .ncols = 1, .levels = levels, .dtype = dt};
    s->feeds[1] = (FlDataFeed){.name = "label", .cols = COL1, .ncols = 1, .dtype = FL_DT_INT64, .label = true};
    s->spec = (FlDataSpec){.path = tmp_write(name, text), .feeds = s->feeds, .nfeeds = 2};
}

/* Packs rows[0..n) of sequence feed 0 and checks sizes, offsets and values (as int64). */
static void expect_seq(const FlDataset *ds, const size_t *rows, size_t n, const size_t *sizes,
                       const int64_t *lod0, const int64_t *lod1, const int64_t *vals) {
    int L = fl_data_feed_levels(ds, 0);
    size_t got[FL_DATA_MAX_LEVELS + 1];
    fl_data_seq_sizes(ds, 0, rows, n, got);
    for (int k = 0; k <= L; k++) CU_ASSERT_EQUAL(got[k], sizes[k]);
    size_t T = got[L];
    int64_t *v = calloc(T + 1, sizeof *v);
    int64_t *o0 = calloc(got[0] + 1, sizeof *o0), *o1 = calloc(got[1] + 1, sizeof *o1);
    int64_t *lod[2] = {o0, o1};
    fl_data_fill_seq(ds, 0, rows, n, v, T * sizeof *v, lod);
    CU_ASSERT_EQUAL(memcmp(o0, lod0, (sizes[0] + 1) * sizeof *o0), 0);
    if (L == 2) CU_ASSERT_EQUAL(memcmp(o1, lod1, (sizes[1] + 1) * sizeof *o1), 0);
    CU_ASSERT_EQUAL(memcmp(v, vals, T * sizeof *v), 0);
    free(v);
    free(o0);
    free(o1);
}

static void test_seq_load(void) {
    Spec s;
    /* One level: blanks (spaces, tabs, several) separate the numbers; rows of 3, 1 and 17. */
    seq_spec(&s, "seq1.csv",
             "3 4 5,1\n"
             " 7 ,0\n"
             "1 2 3 4 5 6 7 8 9 10 11 12 13 14\t15  16 17,1\n", 1, FL_DT_INT64);
    FlDataset *ds = open_ok(&s.spec);
    CU_ASSERT_EQUAL(fl_data_rows(ds), 3);
    CU_ASSERT_EQUAL(fl_data_feed_levels(ds, 0), 1);
    CU_ASSERT_EQUAL(fl_data_feed_levels(ds, 1), 0);
    CU_ASSERT_EQUAL(fl_data_feed_cols(ds, 0), 1);
    int64_t all[21] = {3, 4, 5, 7, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17};
    expect_seq(ds, (const size_t[]){0, 1, 2}, 3, (const size_t[]){3, 21}, (const int64_t[]){0, 3, 4, 21}, NULL, all);
    /* Any order, repeats: rows are packed in the order asked. */
    expect_seq(ds, (const size_t[]){1, 0, 1}, 3, (const size_t[]){3, 5}, (const int64_t[]){0, 1, 4, 5}, NULL,
               (const int64_t[]){7, 3, 4, 5, 7});
    expect_seq(ds, (const size_t[]){0}, 0, (const size_t[]){0, 0}, (const int64_t[]){0}, NULL, all);
    int64_t label[3];
    fl_data_fill_rows(ds, 1, (const size_t[]){0, 1, 2}, 3, label, sizeof label);
    CU_ASSERT_EQUAL(label[1], 0);
    fl_data_free(ds);

    /* Two levels: '|' separates sub-sequences, blanks around it are fine. */
    seq_spec(&s, "seq2.csv",
             "3 4 5|6 7|8,1\n"
             "9,0\n"
             "1 2 | 3\t|4 ,1\n", 2, FL_DT_INT64);
    ds = open_ok(&s.spec);
    CU_ASSERT_EQUAL(fl_data_feed_levels(ds, 0), 2);
    expect_seq(ds, (const size_t[]){0, 1, 2}, 3, (const size_t[]){3, 7, 11}, (const int64_t[]){0, 3, 4, 7},
               (const int64_t[]){0, 3, 5, 6, 7, 9, 10, 11}, (const int64_t[]){3, 4, 5, 6, 7, 8, 9, 1, 2, 3, 4});
    expect_seq(ds, (const size_t[]){2, 1}, 2, (const size_t[]){2, 4, 5}, (const int64_t[]){0, 3, 4},
               (const int64_t[]){0, 2, 3, 4, 5}, (const int64_t[]){1, 2, 3, 4, 9});
    fl_data_free(ds);

    /* float32 values, scaled; a header row; the label column may precede. */
    seq_spec(&s, "seqf.csv", "text,label\n0.5 -1.5e1,2\n4,3\n", 1, FL_DT_FLOAT32);
    s.spec.skip_rows = 1;
    s.feeds[0].has_scale = true;
    s.feeds[0].scale = 2;
    ds = open_ok(&s.spec);
    size_t sz[3];
    fl_data_seq_sizes(ds, 0, (const size_t[]){0, 1}, 2, sz);
    CU_ASSERT_EQUAL(sz[1], 3);
    float v[3];
    int64_t o[3];
    int64_t *lod[1] = {o};
    fl_data_fill_seq(ds, 0, (const size_t[]){0, 1}, 2, v, sizeof v, lod);
    CU_ASSERT_EQUAL(v[0], 1.0f);
    CU_ASSERT_EQUAL(v[1], -30.0f);
    CU_ASSERT_EQUAL(v[2], 8.0f);
    CU_ASSERT_EQUAL(o[1], 2);
    CU_ASSERT_EQUAL(o[2], 3);
    fl_data_free(ds);
}

/* A sequence of steps of 4 values (a detection program's boxes, layers.data(shape=[4],
 * lod_level=1)): a row holds a multiple of 4 numbers; the sizes and offsets count steps, the
 * values pack as [T, 4]; two feeds are cut alike when they hold as many steps. */
static void test_seq_width(void) {
    Spec s;
    seq_spec(&s, "seqw.csv", "1 2 3 4 5 6 7 8,1\n9 10 11 12,0\n", 1, FL_DT_INT64);
    s.feeds[0].width = 4;
    FlDataset *ds = open_ok(&s.spec);
    CU_ASSERT_EQUAL(fl_data_feed_width(ds, 0), 4);
    size_t sz[FL_DATA_MAX_LEVELS + 1];
    fl_data_seq_sizes(ds, 0, (const size_t[]){1, 0}, 2, sz);
    CU_ASSERT_EQUAL(sz[0], 2);
    CU_ASSERT_EQUAL(sz[1], 3);
    int64_t v[12], o[3];
    int64_t *lod[1] = {o};
    fl_data_fill_seq(ds, 0, (const size_t[]){1, 0}, 2, v, sizeof v, lod);
    CU_ASSERT_EQUAL(memcmp(v, ((const int64_t[]){9, 10, 11, 12, 1, 2, 3, 4, 5, 6, 7, 8}), sizeof v), 0);
    CU_ASSERT_EQUAL(memcmp(o, ((const int64_t[]){0, 1, 3}), sizeof o), 0);
    fl_data_free(ds);

    /* boxes and their labels: 2 steps and 2 values, cut alike; 2 steps and 1 value, not */
    static const size_t COLS01[3] = {0, 1, 2};
    memset(&s, 0, sizeof s);
    s.feeds[0] = (FlDataFeed){.name = "box", .cols = COLS01, .ncols = 1, .levels = 1, .width = 4, .dtype = FL_DT_FLOAT32};
    s.feeds[1] = (FlDataFeed){.name = "label", .cols = COLS01 + 1, .ncols = 1, .levels = 1, .dtype = FL_DT_INT64};
    s.spec = (FlDataSpec){.path = tmp_write("seqw2.csv", "0 0 1 1 2 2 3 3,1 2\n0 0 1 1 2 2 3 3,1\n"), .feeds = s.feeds,
                          .nfeeds = 2};
    ds = open_ok(&s.spec);
    CU_ASSERT(fl_data_seq_same_cut(ds, 0, 1, 0));
    CU_ASSERT(!fl_data_seq_same_cut(ds, 0, 1, 1));
    fl_data_free(ds);

    /* int32 (detection programs' labels), a sequence and a column: read exactly, checked to fit */
    s.feeds[0] = (FlDataFeed){.name = "label", .cols = COLS01 + 1, .ncols = 1, .levels = 1, .dtype = FL_DT_INT32};
    s.feeds[1] = (FlDataFeed){.name = "n", .cols = COLS01 + 2, .ncols = 1, .dtype = FL_DT_INT32};
    s.spec = (FlDataSpec){.path = tmp_write("seqw4.csv", "0 0 1 1,-2147483648,7\n0 0 1 1 2 2 3 3,2147483647 3,-1\n"),
                          .feeds = s.feeds, .nfeeds = 2};
    ds = open_ok(&s.spec);
    int32_t lab[3], nn[2];
    int64_t lo[3];
    int64_t *llod[1] = {lo};
    fl_data_fill_seq(ds, 0, (const size_t[]){0, 1}, 2, lab, sizeof lab, llod);
    CU_ASSERT(lab[0] == INT32_MIN && lab[1] == INT32_MAX && lab[2] == 3);
    fl_data_fill_rows(ds, 1, (const size_t[]){1, 0}, 2, nn, sizeof nn);
    CU_ASSERT(nn[0] == -1 && nn[1] == 7);
    fl_data_free(ds);
    const char *big = tmp_write("seqw5.csv", "0 0 1 1,1 2147483648,7\n");
    s.spec.path = big;
    char want[512];
    snprintf(want, sizeof want, "%s:1:11: '2147483648' is out of range (column 1, feed 'label' is int32)", big);
    open_fails(&s.spec, NULL, want);

    /* a row that is not whole steps is an error at its line; steps of several values need one level */
    seq_spec(&s, "seqw3.csv", "1 2 3 4,1\n 5 6 7,0\n", 1, FL_DT_INT64);
    s.feeds[0].width = 4;
    expect_error(&s, ":2:2: the sequence holds 3 numbers, not a multiple of 4, the values of one step (column 0, feed 'words')");
    s.feeds[0].levels = 2;
    open_fails(&s.spec, NULL, "io.csv: feed 'words' has steps of 4 values; only a sequence of one level may");
}

/* n rows "i i+1 ... " of length 1 + i % 5, label i % 2: a file for split and share tests. */
static const char *seq_file(const char *name, size_t n, int levels) {
    FlBuf b = {0};
    for (size_t i = 0; i < n; i++) {
        for (size_t k = 0; k <= i % 5; k++)
            fl_buf_printf(&b, "%s%zu", k == 0 ? "" : levels == 2 && k % 2 == 0 ? "|" : " ", i * 10 + k);
        fl_buf_printf(&b, ",%zu\n", i % 2);
    }
    const char *path = tmp_write(name, fl_buf_str(&b));
    fl_buf_free(&b);
    return path;
}

/* The first value of each sequence of a packed batch is 10 * its file row: the rows of the batch. */
static void seq_rows(const FlDataset *ds, const size_t *rows, size_t n, size_t *out) {
    size_t sizes[3];
    fl_data_seq_sizes(ds, 0, rows, n, sizes);
    int L = fl_data_feed_levels(ds, 0);
    int64_t *v = calloc(sizes[L] + 1, sizeof *v), *o0 = calloc(n + 1, sizeof *o0),
            *o1 = calloc(sizes[1] + 1, sizeof *o1);
    int64_t *lod[2] = {o0, o1};
    fl_data_fill_seq(ds, 0, rows, n, v, sizes[L] * sizeof *v, lod);
    for (size_t k = 0; k < n; k++) {
        int64_t first = L == 2 ? o1[o0[k]] : o0[k], end = L == 2 ? o1[o0[k + 1]] : o0[k + 1];
        size_t r = (size_t)v[first] / 10;
        out[k] = r;
        CU_ASSERT_EQUAL(end - first, (int64_t)(1 + r % 5)); /* whole */
        if (L == 2) CU_ASSERT_EQUAL(o0[k + 1] - o0[k], (int64_t)(1 + (r % 5) / 2));
        for (int64_t j = first; j < end; j++) CU_ASSERT_EQUAL(v[j], (int64_t)r * 10 + (j - first));
    }
    free(v);
    free(o0);
    free(o1);
}

static void test_seq_split_shuffle_shares(void) {
    for (int L = 1; L <= 2; L++) {
        Spec s;
        seq_spec(&s, L == 1 ? "seqs1.csv" : "seqs2.csv", "", L, FL_DT_INT64);
        s.spec.path = seq_file(L == 1 ? "seqs1.csv" : "seqs2.csv", 103, L);
        s.spec.part = FL_DATA_TRAIN;
        s.spec.split_fraction = 0.8;
        s.spec.split_seed = 4;
        FlDataset *tr = open_ok(&s.spec);
        s.spec.part = FL_DATA_TEST;
        FlDataset *te = open_ok(&s.spec);
        CU_ASSERT_EQUAL(fl_data_rows(tr), 82);
        CU_ASSERT_EQUAL(fl_data_rows(te), 21);
        /* The parts hold whole rows, each once: origins match the rows the values name. */
        bool seen[103] = {0};
        for (int p = 0; p < 2; p++) {
            const FlDataset *ds = p ? te : tr;
            size_t n = fl_data_rows(ds), rows[82], got[82];
            for (size_t i = 0; i < n; i++) rows[i] = i;
            seq_rows(ds, rows, n, got);
            for (size_t i = 0; i < n; i++) {
                CU_ASSERT_EQUAL(got[i], fl_data_row_origin(ds, i));
                CU_ASSERT_FALSE(seen[got[i]]);
                seen[got[i]] = true;
            }
        }
        /* Shares of T=3, b=10: whole sequences; together the global batch of a local run with
         * batch 30 (the same rows in the same order). */
        FlErr e;
        FlDataEpoch *ep, *g;
        CU_ASSERT_FATAL(fl_data_epoch_new(tr, 10, 3, true, 9, 2, &ep, &e) == FL_OK);
        CU_ASSERT_FATAL(fl_data_epoch_new(tr, 30, 1, true, 9, 2, &g, &e) == FL_OK);
        CU_ASSERT_EQUAL(fl_data_epoch_batches(ep), 3);
        size_t total = 0;
        for (size_t b = 0; b < 3; b++) {
            size_t gn, want[30], got[30], sum = 0;
            const size_t *grows = fl_data_epoch_share(g, b, 0, &gn);
            seq_rows(tr, grows, gn, want);
            for (size_t t = 0; t < 3; t++) {
                size_t n;
                const size_t *rows = fl_data_epoch_share(ep, b, t, &n);
                CU_ASSERT_EQUAL(n, b < 2 || t < 2 ? 10 : 2); /* the last: 22 = 10, 10, 2 */
                if (n) seq_rows(tr, rows, n, got + sum);
                sum += n;
            }
            CU_ASSERT_EQUAL(sum, gn);
            CU_ASSERT_EQUAL(memcmp(got, want, gn * sizeof *got), 0);
            total += gn;
        }
        CU_ASSERT_EQUAL(total, 82);
        fl_data_epoch_free(ep);
        fl_data_epoch_free(g);
        fl_data_free(tr);
        fl_data_free(te);
    }
}

static void test_seq_errors(void) {
    static const struct {
        const char *text;
        int levels;
        FlDType dtype;
        const char *want; /* after the path */
    } cases[] = {
        {"1 2,0\n,1\n", 1, FL_DT_INT64, ":2:1: empty sequence (column 0, feed 'words')"},
        {"1 2,0\n  \t ,1\n", 1, FL_DT_INT64, ":2:1: empty sequence (column 0, feed 'words')"},
        {"1 2,0\n3 x 5,1\n", 1, FL_DT_INT64, ":2:3: 'x' is not a number (column 0, feed 'words')"},
        {"1 2.5,0\n", 1, FL_DT_INT64, ":1:3: '2.5' is not an integer (column 0, feed 'words' is int64)"},
        {"1 2,0\n1 1e39,0\n", 1, FL_DT_FLOAT32, ":2: column 0: value '1e39' is out of float32 range (feed 'words')"},
        {"1 2|3,0\n", 1, FL_DT_INT64,
         ":1:4: '|' in a sequence of one level (column 0, feed 'words'; nested sequences need io.sequence(0, levels=2))"},
        {"1 2|3,0\n1||3,0\n", 2, FL_DT_INT64, ":2:3: empty sub-sequence before '|' (column 0, feed 'words')"},
        {" | 3,0\n", 2, FL_DT_INT64, ":1:2: empty sub-sequence before '|' (column 0, feed 'words')"},
        {"1 2|3,0\n4 5 | ,0\n", 2, FL_DT_INT64, ":2:5: empty sub-sequence after '|' (column 0, feed 'words')"},
        {"1 2|3,0\n4 5|6|x,0\n", 2, FL_DT_INT64, ":2:7: 'x' is not a number (column 0, feed 'words')"},
    };
    Spec s;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char name[32];
        snprintf(name, sizeof name, "seqe%zu.csv", i);
        seq_spec(&s, name, cases[i].text, cases[i].levels, cases[i].dtype);
        expect_error(&s, cases[i].want);
    }
    /* Descriptions that make no sense. */
    seq_spec(&s, "seqe11.csv", "1 2,0\n", 1, FL_DT_FLOAT32);
    s.feeds[0].normalize = true;
    open_fails(&s.spec, NULL, "io.csv: feed 'words' is a sequence and cannot be normalised");
    s.feeds[0].normalize = false;
    s.spec.sep = ' ';
    open_fails(&s.spec, NULL, "io.csv: feed 'words' is a sequence of blank-separated numbers; the separator cannot be a blank");
    s.spec.sep = '|';
    s.feeds[0].levels = 2;
    open_fails(&s.spec, NULL, "io.csv: feed 'words' is a nested sequence, whose sub-sequences '|' separates; the separator cannot be '|'");
    s.spec.sep = 0;
    s.feeds[0].levels = 3;
    open_fails(&s.spec, NULL, "io.csv: feed 'words' has 3 sequence levels; at most 2");
    s.feeds[0].levels = 1;
    s.feeds[0].cols = COLS3;
    s.feeds[0].ncols = 2;
    open_fails(&s.spec, NULL, "io.csv: sequence feed 'words' has 2 columns; it reads one");
}

/* A value that normalising or scaling takes out of its feed's dtype's range is an error naming
 * the file, the row's line (blank and skipped lines counted), the column and the feed, when the
 * dataset is made: never an inf that the training reports later as a diverged loss. */
static void test_scale_out_of_range(void) {
    Spec s;
    tmp_spec(&s, "scale_big.csv", "h\n1,2,3\n\n4,-5e30,6\n", false);
    s.spec.skip_rows = 1;
    s.feeds[0].has_scale = true;
    s.feeds[0].scale = 1e10;
    expect_error(&s, ":4: column 1: value -5e+30 scaled by 1e+10 is -5e+40, out of float32 range (feed 'a')");
    s.feeds[0].scale = 1e300; /* a float64 feed overflows a double */
    s.feeds[0].dtype = FL_DT_FLOAT64;
    expect_error(&s, ":4: column 1: value -5e+30 scaled by 1e+300 is -inf, out of float64 range (feed 'a')");
    /* normalised then scaled: the z-scores of 1, 4 are -1, 1 */
    tmp_spec(&s, "scale_norm.csv", "1,2,3\n4,5,6\n", false);
    s.feeds[0].normalize = true;
    s.feeds[0].has_scale = true;
    s.feeds[0].scale = 4e38;
    expect_error(&s, ":1: column 0: value 1 normalised with mean 2.5 and std 1.5 and scaled by 4e+38 is -4e+38, out of "
                     "float32 range (feed 'a')");
    /* prediction rows normalised with the training rows' statistics, without a scale */
    tmp_spec(&s, "scale_train.csv", "1,0,0\n2,0,0\n", false);
    s.feeds[0].normalize = true;
    FlDataset *tr = open_ok(&s.spec);
    const char *pred = tmp_write("scale_pred.csv", "1,0,0\n3e38,0,0\n");
    FlErr e;
    FlDataset *ds = (FlDataset *)1;
    CU_ASSERT_EQUAL(fl_data_predict_load(tr, pred, 0, 0, &ds, &e), FL_ERROR);
    char want[1024];
    snprintf(want, sizeof want, "%s:2: column 0: value 3e+38 normalised with mean 1.5 and std 0.5 is 6e+38, out of "
                                "float32 range (feed 'a')", pred);
    CU_ASSERT_STRING_EQUAL(e.msg, want);
    fl_data_free(tr);
    /* a sequence feed: the row of the value */
    seq_spec(&s, "scale_seq.csv", "1 2,0\n3 4|5e30 6,1\n", 2, FL_DT_FLOAT32);
    s.feeds[0].has_scale = true;
    s.feeds[0].scale = 1e9;
    expect_error(&s, ":2: column 0: value 5e+30 scaled by 1e+09 is 5e+39, out of float32 range (feed 'words')");
    /* within range: the lines of the rows */
    tmp_spec(&s, "lines.csv", "h\n1,2,3\n\n4,5,6\n", false);
    s.spec.skip_rows = 1;
    s.feeds[0].has_scale = true;
    s.feeds[0].scale = 1e30;
    ds = open_ok(&s.spec);
    CU_ASSERT_EQUAL(fl_data_row_line(ds, 0), 2);
    CU_ASSERT_EQUAL(fl_data_row_line(ds, 1), 4);
    CU_ASSERT_STRING_EQUAL(fl_data_file(ds), s.spec.path);
    fl_data_free(ds);
}

/* ---- sharing between threads ---- */

typedef struct Job {
    const FlDataEpoch *ep;
    size_t trainer;
    uint64_t sum;
} Job;

static void *fill_all(void *arg) {
    Job *j = arg;
    float buf[8 * 64];
    for (int rep = 0; rep < 4; rep++)
        for (size_t i = 0; i < fl_data_epoch_batches(j->ep); i++) {
            size_t n = fl_data_epoch_share_rows(j->ep, i, j->trainer);
            fl_data_epoch_fill(j->ep, i, j->trainer, 0, buf, sizeof buf);
            for (size_t k = 0; k < n * 64; k++) j->sum += (uint64_t)(buf[k] * 16);
        }
    return NULL;
}

static void test_threads(void) {
    Spec s;
    digits(&s, true);
    FlDataset *ds = open_ok(&s.spec);
    FlErr e;
    FlDataEpoch *ep;
    CU_ASSERT_FATAL(fl_data_epoch_new(ds, 8, 4, true, 5, 0, &ep, &e) == FL_OK);
    pthread_t th[4];
    Job jobs[4];
    for (size_t t = 0; t < 4; t++) {
        jobs[t] = (Job){ep, t, 0};
        CU_ASSERT_FATAL(pthread_create(&th[t], NULL, fill_all, &jobs[t]) == 0);
    }
    uint64_t total = 0;
    for (size_t t = 0; t < 4; t++) {
        pthread_join(th[t], NULL);
        total += jobs[t].sum;
    }
    double *v = all_values(ds, 0);
    uint64_t want = 0;
    for (size_t i = 0; i < 1797 * 64; i++) want += (uint64_t)(v[i] * 16);
    CU_ASSERT_EQUAL(total, 4 * want);
    free(v);
    fl_data_epoch_free(ep);
    fl_data_free(ds);
}

int main(void) {
    if (CU_initialize_registry() != CUE_SUCCESS) return 2;
    CU_pSuite s = CU_add_suite("data", suite_init, suite_fini);
    CU_add_test(s, "boston load", test_boston_load);
    CU_add_test(s, "digits load", test_digits_load);
    CU_add_test(s, "skip_rows", test_skip_rows);
    CU_add_test(s, "gz vs plain", test_gz_vs_plain);
    CU_add_test(s, "split", test_split);
    CU_add_test(s, "normalize", test_normalize);
    CU_add_test(s, "scale", test_scale);
    CU_add_test(s, "scale_out_of_range", test_scale_out_of_range);
    CU_add_test(s, "shuffle", test_shuffle);
    CU_add_test(s, "batching", test_batching);
    CU_add_test(s, "trainer shares", test_trainer_shares);
    CU_add_test(s, "predict", test_predict);
    CU_add_test(s, "errors", test_errors);
    CU_add_test(s, "lenient syntax", test_lenient_syntax);
    CU_add_test(s, "long lines, truncated gzip", test_long_lines_and_truncated_gz);
    CU_add_test(s, "fast decimals match strtod", test_fast_decimals_match_strtod);
    CU_add_test(s, "threads", test_threads);
    CU_add_test(s, "sequence load and packing", test_seq_load);
    CU_add_test(s, "sequence split, shuffle, shares", test_seq_split_shuffle_shares);
    CU_add_test(s, "sequence errors", test_seq_errors);
    CU_add_test(s, "sequence of steps of several values", test_seq_width);
    CU_basic_set_mode(CU_BRM_VERBOSE);
    CU_basic_run_tests();
    unsigned failed = CU_get_number_of_failures() + CU_get_number_of_tests_failed();
    CU_cleanup_registry();
    return failed ? 1 : 0;
}
