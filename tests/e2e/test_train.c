/* test_train: flrun trains the acceptance programs on real data to the figures they should reach,
 * deterministically, saves/loads/predicts, and fails cleanly on bad input.
 * Outputs never overwrite inputs or non-checkpoints, are checked before the first step, and a
 * save killed at any moment leaves a loadable checkpoint.
 *   test_train FLRUN FLC     (run from the repository root) */
#define _GNU_SOURCE
#include <CUnit/Basic.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "compiler/ir/ir.h"
#include "compiler/ir/ir_test.h"
#include "lang/eval.h"
#include "runtime/data/data.h"
#include "tests/cunit.h"

static const char *flrun, *flc;
static char tmp[256];

/* Runs a shell command; returns its exit status and, if out != NULL, its stdout+stderr. */
static int sh(char **out, const char *fmt, ...) {
    char cmd[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    FILE *p = popen(cmd, "r");
    if (!p) return -1;
    FlBuf b = {0};
    char chunk[4096];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, p)) > 0) fl_buf_append(&b, chunk, n);
    int st = pclose(p);
    if (out) *out = fl_xstrdup(fl_buf_str(&b));
    fl_buf_free(&b);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* The value of column `col` in the last line of a --log CSV whose phase is `phase`. */
static double last_figure(const char *log, const char *phase, const char *col) {
    FILE *f = fopen(log, "r");
    if (!f) return NAN;
    char line[4096], header[4096];
    double v = NAN;
    if (!fgets(header, sizeof header, f)) {
        fclose(f);
        return NAN;
    }
    header[strcspn(header, "\n")] = 0;
    int idx = -1, k = 0;
    for (char *t = strtok(header, ","); t; t = strtok(NULL, ","), k++)
        if (!strcmp(t, col)) idx = k;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, phase, strlen(phase)) != 0) continue;
        k = 0;
        for (char *t = strtok(line, ","); t; t = strtok(NULL, ","), k++)
            if (k == idx) v = strtod(t, NULL);
    }
    fclose(f);
    return v;
}

/* ---- fit_a_line against the closed-form least-squares optimum ---- */

/* Solves the normal equations (X'X) w = X'y in float64 (Gaussian elimination, partial pivoting)
 * on the same split and normalisation flrun uses, and returns the test MSE. */
static double least_squares_test_mse(void) {
    size_t cols[14];
    for (int i = 0; i < 14; i++) cols[i] = (size_t)i;
    FlDataFeed feeds[2] = {
        {.name = "x", .cols = cols, .ncols = 13, .dtype = FL_DT_FLOAT64, .normalize = true},
        {.name = "y", .cols = cols + 13, .ncols = 1, .dtype = FL_DT_FLOAT64, .label = true},
    };
    FlDataSpec spec = {.path = "data/boston_house_prices.csv", .skip_rows = 2, .feeds = feeds, .nfeeds = 2};
    FlDataSource *src;
    FlDataset *train, *test;
    FlErr e;
    CU_ASSERT_FATAL(fl_data_source_load(&spec, "examples", &src, &e) == FL_OK);
    CU_ASSERT_FATAL(fl_data_split(src, 0.8, 1, &train, &test, &e) == FL_OK);
    enum { D = 14 };
    double A[D][D + 1] = {{0}};
    size_t n = fl_data_rows(train);
    double *x = malloc(n * 13 * sizeof *x), *y = malloc(n * sizeof *y);
    size_t *rows = malloc(n * sizeof *rows);
    for (size_t i = 0; i < n; i++) rows[i] = i;
    fl_data_fill_rows(train, 0, rows, n, x, n * 13 * sizeof *x);
    fl_data_fill_rows(train, 1, rows, n, y, n * sizeof *y);
    for (size_t r = 0; r < n; r++) {
        double row[D];
        for (int j = 0; j < 13; j++) row[j] = x[r * 13 + j];
        row[13] = 1.0;
        for (int i = 0; i < D; i++) {
            for (int j = 0; j < D; j++) A[i][j] += row[i] * row[j];
            A[i][D] += row[i] * y[r];
        }
    }
    for (int c = 0; c < D; c++) {
        int piv = c;
        for (int r = c + 1; r < D; r++)
            if (fabs(A[r][c]) > fabs(A[piv][c])) piv = r;
        for (int k = 0; k <= D; k++) {
            double t = A[c][k];
            A[c][k] = A[piv][k];
            A[piv][k] = t;
        }
        for (int r = 0; r < D; r++) {
            if (r == c) continue;
            double f = A[r][c] / A[c][c];
            for (int k = c; k <= D; k++) A[r][k] -= f * A[c][k];
        }
    }
    double w[D];
    for (int i = 0; i < D; i++) w[i] = A[i][D] / A[i][i];
    size_t m = fl_data_rows(test);
    x = realloc(x, m * 13 * sizeof *x);
    y = realloc(y, m * sizeof *y);
    rows = realloc(rows, m * sizeof *rows);
    for (size_t i = 0; i < m; i++) rows[i] = i;
    fl_data_fill_rows(test, 0, rows, m, x, m * 13 * sizeof *x);
    fl_data_fill_rows(test, 1, rows, m, y, m * sizeof *y);
    double se = 0;
    for (size_t r = 0; r < m; r++) {
        double p = w[13];
        for (int j = 0; j < 13; j++) p += w[j] * x[r * 13 + j];
        se += (p - y[r]) * (p - y[r]);
    }
    free(x);
    free(y);
    free(rows);
    fl_data_free(train);
    fl_data_free(test);
    fl_data_source_free(src);
    return se / (double)m;
}

static void test_fit_a_line(void) {
    char log[300];
    snprintf(log, sizeof log, "%s/fal.csv", tmp);
    CU_ASSERT_EQUAL_FATAL(sh(NULL, "%s examples/fit_a_line.fl -q --log %s", flrun, log), 0);
    double mse = last_figure(log, "test", "loss");
    double opt = least_squares_test_mse();
    printf("\n    fit_a_line: test MSE %.4f, least-squares optimum %.4f (%.1f%% above)\n", mse, opt, 100 * (mse - opt) / opt);
    CU_ASSERT(isfinite(mse) && mse <= opt * 1.10);
    /* the same seed gives the same log, byte for byte */
    char log2[300];
    snprintf(log2, sizeof log2, "%s/fal2.csv", tmp);
    CU_ASSERT_EQUAL(sh(NULL, "%s examples/fit_a_line.fl -q --log %s", flrun, log2), 0);
    CU_ASSERT_EQUAL(sh(NULL, "cmp -s %s %s", log, log2), 0);
    /* another seed shuffles differently */
    CU_ASSERT_EQUAL(sh(NULL, "%s examples/fit_a_line.fl -q --seed 7 --log %s", flrun, log2), 0);
    CU_ASSERT_NOT_EQUAL(sh(NULL, "cmp -s %s %s", log, log2), 0);
}

static void test_digits(void) {
    char log[300];
    snprintf(log, sizeof log, "%s/mlp.csv", tmp);
    CU_ASSERT_EQUAL_FATAL(sh(NULL, "%s examples/recognize_digits.fl -q --log %s", flrun, log), 0);
    double acc = last_figure(log, "test", "acc");
    printf("\n    digits MLP: test accuracy %.4f\n", acc);
    CU_ASSERT(acc >= 0.95);
    snprintf(log, sizeof log, "%s/cnn.csv", tmp);
    CU_ASSERT_EQUAL_FATAL(sh(NULL, "%s examples/recognize_digits.fl -D net=cnn -q --log %s", flrun, log), 0);
    acc = last_figure(log, "test", "acc");
    printf("    digits CNN: test accuracy %.4f\n", acc);
    CU_ASSERT(acc >= 0.95);
}

static void test_save_load_predict(void) {
    char dir[300], feat[300];
    snprintf(dir, sizeof dir, "%s/params", tmp);
    snprintf(feat, sizeof feat, "%s/features.csv", tmp);
    /* the first 12 data rows of the housing file, features only */
    CU_ASSERT_EQUAL_FATAL(sh(NULL, "sed -n 3,14p examples/data/boston_house_prices.csv | cut -d, -f1-13 > %s", feat), 0);
    char *direct = NULL, *loaded = NULL, *out = NULL;
    CU_ASSERT_EQUAL(sh(&direct, "%s examples/fit_a_line.fl -q --epochs 5 --save %s --predict %s", flrun, dir, feat), 0);
    CU_ASSERT_EQUAL(sh(&loaded, "%s examples/fit_a_line.fl -q --load %s --predict %s", flrun, dir, feat), 0);
    CU_ASSERT_STRING_EQUAL(direct, loaded);
    int lines = 0;
    for (const char *p = direct; *p; p++) lines += *p == '\n';
    CU_ASSERT_EQUAL(lines, 12);
    /* the shipped example: 3 feature rows in, 3 predictions out; with the label column too */
    CU_ASSERT_EQUAL(sh(&out, "%s examples/fit_a_line.fl -q --load %s --predict examples/data/boston_features.csv", flrun,
                       dir), 0);
    lines = 0;
    for (const char *p = out; *p; p++) lines += *p == '\n';
    CU_ASSERT_EQUAL(lines, 3);
    free(out);
    /* header lines, or rows too narrow for the feature columns: located errors, not lost rows */
    CU_ASSERT_EQUAL(sh(&out, "head -n 5 examples/data/boston_house_prices.csv > %s.h && "
                             "%s examples/fit_a_line.fl -q --load %s --predict %s.h 2>&1", feat, flrun, dir, feat), 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, ".h:1:"));
    free(out);
    CU_ASSERT_EQUAL(sh(&out, "cut -d, -f1-12 %s > %s.n && %s examples/fit_a_line.fl -q --load %s --predict %s.n 2>&1",
                       feat, feat, flrun, dir, feat), 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, ".n:1: feed 'x' uses column 12, but the rows have 12 columns"));
    free(out);
    /* a missing parameter and a mis-shaped one: clear errors, exit 1 */
    CU_ASSERT_EQUAL(sh(NULL, "cp -r %s %s.bad && rm %s.bad/fc_0.w_0", dir, dir, dir), 0);
    CU_ASSERT_EQUAL(sh(&out, "%s examples/fit_a_line.fl -q --load %s.bad 2>&1", flrun, dir), 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "no saved value for 'fc_0.w_0'"));
    free(out);
    /* a program with 12 features saves a [12, 1] weight */
    CU_ASSERT_EQUAL(sh(NULL, "sed 's/shape=\\[13\\]/shape=[12]/; s/range(0, 13)/range(0, 12)/' examples/fit_a_line.fl > examples/.fl_test_12.fl"), 0);
    CU_ASSERT_EQUAL(sh(NULL, "%s examples/.fl_test_12.fl -q --epochs 1 --save %s.12", flrun, dir), 0);
    CU_ASSERT_EQUAL(sh(&out, "%s examples/fit_a_line.fl -q --load %s.12 2>&1", flrun, dir), 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "'fc_0.w_0' is float32 [12, 1] in the file but float32 [13, 1] in the program"));
    free(out);
    remove("examples/.fl_test_12.fl");
    free(direct);
    free(loaded);
}

static void test_bad_input(void) {
    char *out = NULL;
    /* a missing data file */
    CU_ASSERT_EQUAL(sh(NULL, "mkdir -p %s/nodata && cp examples/fit_a_line.fl %s/nodata/", tmp, tmp), 0);
    CU_ASSERT_EQUAL(sh(&out, "%s %s/nodata/fit_a_line.fl -q --log %s/nodata/log.csv 2>&1", flrun, tmp, tmp), 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "data/boston_house_prices.csv"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "No such file or directory"));
    free(out);
    struct stat st;
    char p[400];
    snprintf(p, sizeof p, "%s/nodata/log.csv", tmp);
    CU_ASSERT_NOT_EQUAL(stat(p, &st), 0); /* nothing written */
    /* a malformed row: file:line */
    CU_ASSERT_EQUAL(sh(NULL, "mkdir -p %s/bad/data && cp examples/fit_a_line.fl %s/bad/ && "
                             "head -n 40 examples/data/boston_house_prices.csv > %s/bad/data/boston_house_prices.csv && "
                             "echo '1,2,3' >> %s/bad/data/boston_house_prices.csv", tmp, tmp, tmp, tmp), 0);
    CU_ASSERT_EQUAL(sh(&out, "%s %s/bad/fit_a_line.fl -q 2>&1", flrun, tmp), 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "boston_house_prices.csv:41: expected 14 columns, found 3"));
    free(out);
    /* a value beyond float32, and a NUL byte: named where they are, not "training diverged" */
    CU_ASSERT_EQUAL(sh(NULL, "head -n 40 examples/data/boston_house_prices.csv > %s/bad/data/boston_house_prices.csv && "
                             "echo '0.1,18,2.31,0,0.538,6.575,65.2,4.09,1,296,15.3,1e39,4.98,24' >> "
                             "%s/bad/data/boston_house_prices.csv", tmp, tmp), 0);
    CU_ASSERT_EQUAL(sh(&out, "%s %s/bad/fit_a_line.fl -q 2>&1", flrun, tmp), 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "boston_house_prices.csv:41: column 11: value '1e39' is out of float32 range"));
    free(out);
    CU_ASSERT_EQUAL(sh(NULL, "head -n 40 examples/data/boston_house_prices.csv > %s/bad/data/boston_house_prices.csv && "
                             "printf '0.1,18,2.31,0,0.538\\0006.575,65.2,4.09,1,296,15.3,1,4.98,24\\n' >> "
                             "%s/bad/data/boston_house_prices.csv && sed -n 3,10p examples/data/boston_house_prices.csv >> "
                             "%s/bad/data/boston_house_prices.csv", tmp, tmp, tmp), 0);
    CU_ASSERT_EQUAL(sh(&out, "%s %s/bad/fit_a_line.fl -q 2>&1", flrun, tmp), 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "boston_house_prices.csv:41: a NUL byte (byte column 20)"));
    free(out);
    /* a .flp written by a newer fluidc */
    FlBundle *b = NULL;
    FlBuf diag = {0};
    CU_ASSERT_EQUAL_FATAL(fl_compile_file("examples/fit_a_line.fl", NULL, &b, &diag), 0);
    size_t len;
    uint8_t *bytes = fl_ir_encode_bundle_version(b, FL_IR_FORMAT_VERSION + 1, &len);
    snprintf(p, sizeof p, "%s/newer.flp", tmp);
    FILE *f = fopen(p, "wb");
    fwrite(bytes, 1, len, f);
    fclose(f);
    free(bytes);
    fl_ir_bundle_free(b);
    fl_buf_free(&diag);
    CU_ASSERT_EQUAL(sh(&out, "%s %s 2>&1", flrun, p), 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "was written by a newer fluidc"));
    free(out);
    /* usage errors: exit 2 */
    CU_ASSERT_EQUAL(sh(NULL, "%s --epochs 2>/dev/null", flrun), 2);
    CU_ASSERT_EQUAL(sh(NULL, "%s examples/fit_a_line.fl --batch-size 0 2>/dev/null", flrun), 2);
    CU_ASSERT_EQUAL(sh(NULL, "%s --bogus x 2>/dev/null", flrun), 2);
    CU_ASSERT_EQUAL(sh(&out, "%s examples/fit_a_line.fl --piece 1001 2>&1", flrun), 2); /* not a multiple of 8 */
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "--piece needs a multiple of 8"));
    free(out);
    CU_ASSERT_EQUAL(sh(&out, "%s examples/fit_a_line.fl --procs 0 2>&1", flrun), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "--procs needs a number of processors from 1 to 1024"));
    free(out);
    CU_ASSERT_EQUAL(sh(NULL, "%s --help >/dev/null", flrun), 0);
}


/* A copy of fit_a_line and its data in W = tmp/w (fresh each time); returns W. */
static const char *workdir(void) {
    static char w[300];
    snprintf(w, sizeof w, "%s/w", tmp);
    CU_ASSERT_EQUAL_FATAL(sh(NULL, "rm -rf %s && mkdir -p %s/data && cp examples/fit_a_line.fl %s/ && "
                                   "cp examples/data/boston_house_prices.csv %s/data/ && "
                                   "cp examples/data/boston_features.csv %s/feat.csv",
                       w, w, w, w, w), 0);
    return w;
}

/* The saved checkpoint DIR loads: --load DIR --predict runs and prints 3 rows. */
static bool loads(const char *w, const char *dir) {
    char *out = NULL;
    int rc = sh(&out, "%s %s/fit_a_line.fl -q --load %s/%s --predict %s/feat.csv 2>&1", flrun, w, w, dir, w);
    int lines = 0;
    for (const char *p = out; p && *p; p++) lines += *p == '\n';
    if (rc != 0 || lines != 3) printf("\n    --load %s: exit %d, %d lines:\n%s", dir, rc, lines, out ? out : "");
    free(out);
    return rc == 0 && lines == 3;
}

static void test_save_targets(void) {
    const char *w = workdir();
    char *out = NULL;
    /* a folder of other files: refused before training, its files untouched */
    CU_ASSERT_EQUAL(sh(&out, "%s %s/fit_a_line.fl --epochs 2 --save %s/data 2>&1", flrun, w, w), 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "is a directory but not a checkpoint"));
    CU_ASSERT_PTR_NULL(strstr(out, "epoch 1/2"));
    free(out);
    CU_ASSERT_EQUAL(sh(NULL, "cmp -s %s/data/boston_house_prices.csv examples/data/boston_house_prices.csv && "
                             "[ $(ls %s/data | wc -l) = 1 ] && [ $(ls %s | wc -l) = 3 ]", w, w, w), 0);
    /* a regular file: refused, unchanged */
    CU_ASSERT_EQUAL(sh(&out, "%s %s/fit_a_line.fl -q --epochs 1 --save %s/data/boston_house_prices.csv 2>&1", flrun,
                       w, w), 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "exists and is not a checkpoint directory"));
    free(out);
    CU_ASSERT_EQUAL(sh(NULL, "cmp -s %s/data/boston_house_prices.csv examples/data/boston_house_prices.csv", w), 0);
    /* a trailing slash: a new checkpoint, then the same one replaced */
    CU_ASSERT_EQUAL(sh(&out, "%s %s/fit_a_line.fl -q --epochs 1 --save %s/params/ 2>&1", flrun, w, w), 0);
    CU_ASSERT_STRING_EQUAL(out, "");
    free(out);
    CU_ASSERT(loads(w, "params"));
    CU_ASSERT_EQUAL(sh(NULL, "cp -r %s/params %s/params.1", w, w), 0);
    CU_ASSERT_EQUAL(sh(&out, "%s %s/fit_a_line.fl -q --epochs 3 --save %s/params/ 2>&1", flrun, w, w), 0);
    CU_ASSERT_STRING_EQUAL(out, "");
    free(out);
    CU_ASSERT(loads(w, "params/"));
    CU_ASSERT_NOT_EQUAL(sh(NULL, "diff -r %s/params %s/params.1 >/dev/null", w, w), 0); /* replaced */
    CU_ASSERT_EQUAL(sh(NULL, "[ $(ls %s | wc -l) = 5 ]", w), 0);                         /* nothing left beside */
    /* a checkpoint with a stray file is not one any more */
    CU_ASSERT_EQUAL(sh(NULL, "cp -r %s/params %s/p2 && echo notes > %s/p2/notes.txt", w, w, w), 0);
    CU_ASSERT_EQUAL(sh(&out, "%s %s/fit_a_line.fl -q --epochs 1 --save %s/p2 2>&1", flrun, w, w), 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "it holds 'notes.txt', which is not in its MANIFEST"));
    free(out);
    CU_ASSERT_EQUAL(sh(NULL, "[ -f %s/p2/notes.txt ] && diff -r %s/params %s/p2 | grep -c notes.txt", w, w, w), 0);
}

static void test_no_input_overwritten(void) {
    const char *w = workdir();
    char *out = NULL;
    CU_ASSERT_EQUAL(sh(NULL, "%s %s/fit_a_line.fl -q --epochs 1 --save %s/params", flrun, w, w), 0);
    CU_ASSERT_EQUAL(sh(NULL, "cp %s/feat.csv %s/f.csv && cp -r %s/params %s/params.copy", w, w, w, w), 0);
    /* a data file is found once the program is loaded (exit 1); the others are paths of the
     * command line, compared before anything runs (bad usage, exit 2) */
    const struct {
        const char *log, *msg;
        int rc;
    } logs[] = {{"data/boston_house_prices.csv", "refusing to overwrite an input", 1},
                {"fit_a_line.fl", "refusing to overwrite an input", 2},
                {"data/../fit_a_line.fl", "refusing to overwrite an input", 2},
                {"f.csv", "refusing to overwrite an input", 2},
                {"params/MANIFEST", "refusing to write into an input", 2},
                {"params/fc_0.w_0", "refusing to write into an input", 2}};
    for (size_t i = 0; i < sizeof logs / sizeof *logs; i++) {
        CU_ASSERT_EQUAL(sh(&out, "%s %s/fit_a_line.fl --epochs 2 --load %s/params --predict %s/f.csv --log %s/%s 2>&1",
                           flrun, w, w, w, w, logs[i].log), logs[i].rc);
        CU_ASSERT_PTR_NOT_NULL(strstr(out, logs[i].msg));
        CU_ASSERT_PTR_NULL(strstr(out, "epoch 1/2"));
        free(out);
    }
    CU_ASSERT_EQUAL(sh(NULL, "cmp -s %s/data/boston_house_prices.csv examples/data/boston_house_prices.csv && "
                             "cmp -s %s/fit_a_line.fl examples/fit_a_line.fl && "
                             "cmp -s %s/f.csv %s/feat.csv && diff -r %s/params %s/params.copy",
                       w, w, w, w, w, w), 0);
    /* flc build -o naming its input, also through a link */
    CU_ASSERT_EQUAL(sh(NULL, "ln %s/fit_a_line.fl %s/link.fl", w, w), 0);
    CU_ASSERT_EQUAL(sh(&out, "%s build %s/fit_a_line.fl -o %s/fit_a_line.fl 2>&1", flc, w, w), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "is the input file; refusing to overwrite it"));
    free(out);
    CU_ASSERT_NOT_EQUAL(sh(NULL, "%s build %s/fit_a_line.fl -o %s/link.fl 2>/dev/null", flc, w, w), 0);
    CU_ASSERT_EQUAL(sh(NULL, "cmp -s %s/fit_a_line.fl examples/fit_a_line.fl", w), 0);
    CU_ASSERT_EQUAL(sh(NULL, "%s build %s/fit_a_line.fl -o %s/x.flp", flc, w, w), 0); /* a new file: fine */
}

/* Outputs that clash with each other or with the --load checkpoint: --save X with --log X or
 * --timeline X, a --log inside the --save directory (new or not), --save or --timeline inside
 * the --load checkpoint, also through a link. Each is bad usage (exit 2) naming both options and
 * the paths, before anything runs: nothing trained, nothing written (before, --save X --log X
 * trained, wrote the log, and then refused the save: the trained result was lost). --save may
 * still name the --load checkpoint. */
static void test_outputs_apart(void) {
    const char *w = workdir();
    CU_ASSERT_EQUAL(sh(NULL, "rm -rf %s/ap && mkdir %s/ap && ln -s %s/ap %s/aplink", w, w, w, w), 0);
    CU_ASSERT_EQUAL(sh(NULL, "%s %s/fit_a_line.fl -q --epochs 1 --save %s/ap/ck", flrun, w, w), 0);
    const struct {
        const char *args, *msg;
    } cases[] = {
        {"--save X/ap/x --log X/ap/x", "--log 'X/ap/x' and --save 'X/ap/x' are the same path; each output needs its own"},
        {"--save X/ap/x --timeline X/aplink/x", "--timeline 'X/aplink/x' and --save 'X/ap/x' are the same path"},
        {"--log X/ap/x --timeline X/ap/./x", "--log 'X/ap/x' and --timeline 'X/ap/./x' are the same path"},
        {"--save X/ap/new --log X/ap/new/log.csv", "--log 'X/ap/new/log.csv' is inside --save 'X/ap/new'; each output "
                                                   "needs its own path"},
        {"--save X/ap/ck --log X/aplink/ck/log.csv", "--log 'X/aplink/ck/log.csv' is inside --save 'X/ap/ck'"},
        {"--load X/ap/ck --save X/ap/ck/sub", "--save 'X/ap/ck/sub' is inside the --load checkpoint ('X/ap/ck'); refusing "
                                              "to write into an input"},
        {"--load X/ap/ck --timeline X/aplink/ck/t.json", "--timeline 'X/aplink/ck/t.json' is inside the --load "
                                                         "checkpoint ('X/ap/ck')"},
        {"--load X/ap/ck/ --log X/ap/ck/new.csv", "--log 'X/ap/ck/new.csv' is inside the --load checkpoint"},
        {"--load X/ap/ck --save X/ap", "--save 'X/ap' holds the --load checkpoint ('X/ap/ck'); refusing to replace an "
                                       "input"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        FlBuf args = {0}, msg = {0};
        for (const char *c = cases[i].args; *c; c++) /* X: the work directory */
            if (*c == 'X') fl_buf_puts(&args, w);
            else fl_buf_putc(&args, *c);
        for (const char *c = cases[i].msg; *c; c++)
            if (*c == 'X') fl_buf_puts(&msg, w);
            else fl_buf_putc(&msg, *c);
        char *out = NULL;
        CU_ASSERT_EQUAL(sh(&out, "%s %s/fit_a_line.fl --epochs 2 %s 2>&1", flrun, w, fl_buf_str(&args)), 2);
        if (!strstr(out, fl_buf_str(&msg))) printf("\n    %s:\n%s", fl_buf_str(&args), out);
        CU_ASSERT_PTR_NOT_NULL(strstr(out, fl_buf_str(&msg)));
        CU_ASSERT_PTR_NULL(strstr(out, "epoch 1/2"));
        free(out);
        fl_buf_free(&args);
        fl_buf_free(&msg);
    }
    /* nothing was written: the directory holds the checkpoint alone, as it was */
    CU_ASSERT_EQUAL(sh(NULL, "[ \"$(ls %s/ap)\" = ck ] && [ $(ls %s/ap/ck | wc -l) = 5 ]", w, w), 0);
    /* --save naming the --load checkpoint, in other spellings: read before training, replaced after */
    CU_ASSERT_EQUAL(sh(NULL, "%s %s/fit_a_line.fl -q --epochs 1 --load %s/ap/ck/ --save %s/aplink/ck", flrun, w, w, w), 0);
    CU_ASSERT(loads(w, "ap/ck"));
}

/* Var names that were file names the checkpoint uses itself, or not file names at all. */
static void test_var_names(void) {
    const char *w = workdir();
    char *a = NULL, *b = NULL;
    CU_ASSERT_EQUAL(sh(NULL, "sed 's|pred = layers.fc(x, size=1)|pred = layers.fc(x, size=1, "
                             "param_attr=fluid.ParamAttr(name=\"MANIFEST\"), bias_attr=fluid.ParamAttr(name=\"a/b@c.d\"))|' "
                             "%s/fit_a_line.fl > %s/names.fl && grep -q MANIFEST %s/names.fl", w, w, w), 0);
    CU_ASSERT_EQUAL(sh(&a, "%s %s/names.fl -q --epochs 2 --save %s/ck --predict %s/feat.csv 2>&1", flrun, w, w, w), 0);
    CU_ASSERT_EQUAL(sh(&b, "%s %s/names.fl -q --load %s/ck --predict %s/feat.csv 2>&1", flrun, w, w, w), 0);
    CU_ASSERT_STRING_EQUAL(a, b);
    free(a);
    free(b);
    CU_ASSERT_EQUAL(sh(NULL, "[ -f %s/ck/FORMAT ] && grep -qx '%%4DANIFEST' %s/ck/MANIFEST && "
                             "grep -qx 'a%%2Fb@c.d' %s/ck/MANIFEST", w, w, w), 0);
    /* a version-1 checkpoint (files named after the vars, no FORMAT) still loads */
    CU_ASSERT_EQUAL(sh(NULL, "%s %s/fit_a_line.fl -q --epochs 1 --save %s/v1 && rm %s/v1/FORMAT", flrun, w, w, w), 0);
    CU_ASSERT(loads(w, "v1"));
}

/* Output problems are found before the first step (no "epoch 1/2" line is printed). */
static void test_early_failures(void) {
    const char *w = workdir();
    struct {
        const char *args, *msg;
    } cases[] = {
        {"--save %s/nodir/params", "--save: cannot create"},
        {"--save %s/fit_a_line.fl/params", "--save: cannot use"},
        {"--log %s/nodir/log.csv", "cannot write"},
        {"--log %s/data", "is not a regular file"},
        {"--predict %s/nope.csv", "nope.csv"},
        {"--predict %s/feat.csv --predict-var nope", "no var 'nope'"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char args[400], *out = NULL;
        snprintf(args, sizeof args, cases[i].args, w);
        CU_ASSERT_EQUAL(sh(&out, "%s %s/fit_a_line.fl --epochs 2 %s 2>&1", flrun, w, args), 1);
        if (!strstr(out, cases[i].msg) || strstr(out, "epoch 1/2")) printf("\n    %s:\n%s", args, out);
        CU_ASSERT_PTR_NOT_NULL(strstr(out, cases[i].msg));
        CU_ASSERT_PTR_NULL(strstr(out, "epoch 1/2"));
        free(out);
    }
}

/* A run that fails after it started the log leaves the earlier log as it was and no partial one. */
static void test_log_on_failure(void) {
    const char *w = workdir();
    CU_ASSERT_EQUAL(sh(NULL, "sed 's/learning_rate=0.01/learning_rate=1e10/' %s/fit_a_line.fl > %s/diverge.fl", w, w), 0);
    CU_ASSERT_EQUAL(sh(NULL, "%s %s/fit_a_line.fl -q --epochs 1 --log %s/log.csv && cp %s/log.csv %s/log.copy", flrun, w,
                       w, w, w), 0);
    char *out = NULL;
    CU_ASSERT_EQUAL(sh(&out, "%s %s/diverge.fl -q --log %s/log.csv 2>&1", flrun, w, w), 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "training diverged"));
    free(out);
    CU_ASSERT_EQUAL(sh(NULL, "cmp -s %s/log.csv %s/log.copy", w, w), 0);
    CU_ASSERT_EQUAL(sh(NULL, "%s %s/diverge.fl -q --log %s/new.csv 2>/dev/null", flrun, w, w), 1);
    CU_ASSERT_EQUAL(sh(NULL, "[ ! -e %s/new.csv ] && [ $(ls %s | grep -c tmp) = 0 ]", w, w), 0);
}

/* A save killed at the switch (FLUIDC_TEST_DIE_AT, the test hook of runtime/params.c) leaves
 * DIR holding the old or the new complete checkpoint, loadable. */
static void test_save_killed(void) {
    const char *w = workdir();
    CU_ASSERT_EQUAL(sh(NULL, "%s %s/fit_a_line.fl -q --epochs 1 --save %s/params && cp -r %s/params %s/old", flrun, w,
                       w, w, w), 0);
    /* killed after the switch, before the old one is removed: the new checkpoint */
    int rc = sh(NULL, "FLUIDC_TEST_DIE_AT=save-switch %s %s/fit_a_line.fl -q --epochs 3 --save %s/params 2>/dev/null",
                flrun, w, w);
    CU_ASSERT_NOT_EQUAL(rc, 0);
    CU_ASSERT(loads(w, "params"));
    CU_ASSERT_NOT_EQUAL(sh(NULL, "diff -r %s/params %s/old >/dev/null", w, w), 0);
    CU_ASSERT_EQUAL(sh(NULL, "%s %s/fit_a_line.fl -q --epochs 3 --save %s/new && diff -r %s/params %s/new", flrun, w,
                       w, w, w), 0);
    /* killed with the new one written, not switched in: the old checkpoint, unchanged */
    CU_ASSERT_EQUAL(sh(NULL, "rm -rf %s/params %s/params.tmp.* && cp -r %s/old %s/params", w, w, w, w), 0);
    rc = sh(NULL, "FLUIDC_TEST_DIE_AT=save-written %s %s/fit_a_line.fl -q --epochs 3 --save %s/params 2>/dev/null",
            flrun, w, w);
    CU_ASSERT_NOT_EQUAL(rc, 0);
    CU_ASSERT(loads(w, "params"));
    CU_ASSERT_EQUAL(sh(NULL, "diff -r %s/params %s/old", w, w), 0);
}

/* A compiled program and its data moved together to another folder train as before; a .flp
 * (or a plan) alone, away from its data, trains with --data-dir pointing at the data. */
static void test_relocated(void) {
    const char *w = workdir();
    CU_ASSERT_EQUAL_FATAL(sh(NULL, "mkdir -p %s/build && %s build %s/fit_a_line.fl -o %s/build/f.flp", w, flc, w, w), 0);
    CU_ASSERT_EQUAL_FATAL(sh(NULL, "%s %s/build/f.flp -q --epochs 2 --log %s/before.csv", flrun, w, tmp), 0);
    CU_ASSERT_EQUAL_FATAL(sh(NULL, "rm -rf %s/moved && mv %s %s/moved", tmp, w, tmp), 0);
    char *out = NULL;
    int rc = sh(&out, "%s %s/moved/build/f.flp -q --epochs 2 --log %s/after.csv 2>&1", flrun, tmp, tmp);
    if (rc) printf("\n    moved program: %s", out);
    CU_ASSERT_EQUAL(rc, 0);
    free(out);
    CU_ASSERT_EQUAL(sh(NULL, "cmp -s %s/before.csv %s/after.csv", tmp, tmp), 0);
    /* the compiled file alone, elsewhere: its data paths no longer resolve, --data-dir fixes it */
    CU_ASSERT_EQUAL_FATAL(sh(NULL, "mkdir -p %s/shared && cp %s/moved/build/f.flp %s/shared/", tmp, tmp, tmp), 0);
    rc = sh(&out, "%s %s/shared/f.flp -q --epochs 2 2>&1", flrun, tmp);
    CU_ASSERT_EQUAL(rc, 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "cannot open"));
    free(out);
    CU_ASSERT_EQUAL(sh(NULL, "%s %s/shared/f.flp -q --epochs 2 --data-dir %s/moved --log %s/dd.csv", flrun, tmp, tmp,
                       tmp), 0);
    CU_ASSERT_EQUAL(sh(NULL, "cmp -s %s/before.csv %s/dd.csv", tmp, tmp), 0);
    /* the same for a plan's roles (run here as its local program would not be: check the file) */
    CU_ASSERT_EQUAL(sh(NULL, "%s transpile %s/moved/build/f.flp --pservers 1 --trainers 1 -o %s/shared/f.plan >/dev/null",
                       flc, tmp, tmp), 0);
    rc = sh(&out, "%s show %s/shared/f.plan", flc, tmp);
    CU_ASSERT_EQUAL(rc, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "/moved\""));
    free(out);
    rc = sh(&out, "%s %s/shared/f.flp --data-dir %s/nowhere 2>&1", flrun, tmp, tmp);
    CU_ASSERT_EQUAL(rc, 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "--data-dir"));
    free(out);
}

/* ---- sequence feeds (io.sequence) ---- */

/* The values after ": " of the next line of `out` from *at that starts with `prefix`; *at moves
 * past it. Returns the count read into v (at most cap), or -1 when no such line is left. */
static int next_values(const char **at, const char *prefix, double *v, int cap) {
    const char *p = *at;
    size_t n = strlen(prefix);
    for (; *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : p + strlen(p))
        if (!strncmp(p, prefix, n)) break;
    if (!*p) return -1;
    const char *end = strchr(p, '\n') ? strchr(p, '\n') : p + strlen(p);
    const char *q = strstr(p, ": ");
    int k = 0;
    for (q = q && q < end ? q + 2 : end; q < end && k < cap; k++) {
        char *e;
        v[k] = strtod(q, &e);
        if (e == q) break;
        q = e;
    }
    *at = end;
    return k;
}

static void test_sequences(void) {
    char *out = NULL, log[300];
    snprintf(log, sizeof log, "%s/tags.csv", tmp);
    /* Token tagging: every step's words come whole, cut by their offsets (row i: i copies of i),
     * each epoch visits the five rows once, and the tags are learned. */
    CU_ASSERT_EQUAL_FATAL(sh(&out, "%s tests/e2e/seq/tags.fl -q --log %s 2>&1", flrun, log), 0);
    const char *at = out;
    double off[8], w[32];
    int steps = 0, seen = 0, sum = 0;
    for (int no; (no = next_values(&at, "offsets words@LOD0 [", off, 8)) > 0; steps++) {
        int nw = next_values(&at, "words words [", w, 32);
        CU_ASSERT_FATAL(no >= 2 && off[0] == 0 && off[no - 1] == nw);
        for (int j = 0; j + 1 < no; j++) {
            int len = (int)(off[j + 1] - off[j]);
            for (int k = (int)off[j]; k < (int)off[j + 1]; k++) CU_ASSERT_EQUAL(w[k], len);
            seen |= 1 << len;
            sum += len;
        }
        if (steps % 3 == 2) { /* an epoch: batches of 2, 2 and 1 rows */
            CU_ASSERT_EQUAL(seen, 0x3e);
            CU_ASSERT_EQUAL(sum, 15);
            seen = sum = 0;
        }
    }
    CU_ASSERT_EQUAL(steps, 90);
    double loss = last_figure(log, "train", "loss");
    printf("\n    sequence tagging: last step's loss %.4f (30 epochs)\n", loss);
    CU_ASSERT(loss < 0.05);
    free(out);
    /* Nested sequences: the batch of all three rows, both levels of offsets, values scaled. */
    CU_ASSERT_EQUAL_FATAL(sh(&out, "%s tests/e2e/seq/nested.fl -q 2>&1", flrun), 0);
    CU_ASSERT_STRING_EQUAL(out, "outer words@LOD0 [4] int64: 0 2 4 7\n"
                                "inner words@LOD1 [8] int64: 0 2 3 4 5 6 8 9\n"
                                "words words [9, 1] float32 lod [0 2 4 7][0 2 3 4 5 6 8 9]: 1 1 1 0.5 0.5 1.5 1.5 1.5 1.5\n");
    free(out);
    /* A bad row is a data error at its file:line:column. */
    CU_ASSERT_EQUAL(sh(NULL, "mkdir -p %s/seq && cp tests/e2e/seq/tags.fl %s/seq/ && "
                             "printf '1,1\\n2 x,2 2\\n' > %s/seq/tags.csv", tmp, tmp, tmp), 0);
    CU_ASSERT_EQUAL(sh(&out, "%s %s/seq/tags.fl -q 2>&1", flrun, tmp), 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "seq/tags.csv:2:3: 'x' is not a number (column 0, feed 'words')"));
    free(out);
    /* Rows with other numbers of words and tags (the same total in each batch of 2) would train
     * with tags shifted between sentences: the row is an error at its line before the first step. */
    CU_ASSERT_EQUAL(sh(NULL, "printf '1,1\\n2 2,2 2\\n3 3 3,0 0\\n4 4,1 1 1\\n' > %s/seq/tags.csv", tmp), 0);
    CU_ASSERT_EQUAL(sh(&out, "%s %s/seq/tags.fl -q 2>&1", flrun, tmp), 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "seq/tags.csv:3: feed 'words' holds 3 values and feed 'tags' 2, but op "
                                       "'cross_entropy' (tags.fl:14:20) combines them row by row: each row must cut "
                                       "them into the same sequences"));
    CU_ASSERT_PTR_NULL(strstr(out, "offsets words@LOD0")); /* no step ran */
    free(out);
    /* A classifier of variable-length reviews (sequence_pool over the fed offsets) learns: test
     * accuracy well above chance (0.5) on a held-out fifth of examples/data/sentiment.csv.gz. */
    CU_ASSERT_EQUAL_FATAL(sh(NULL, "%s tests/e2e/seq/sentiment.fl -q --log %s", flrun, log), 0);
    double acc = last_figure(log, "test", "acc");
    printf("    sentiment (embedding, sequence_pool, fc): test accuracy %.4f\n", acc);
    CU_ASSERT(acc >= 0.7);
    /* --predict reads the sequences, but an output with a row per token is not one per input row */
    CU_ASSERT_EQUAL(sh(NULL, "printf '1\\n2 2\\n3 3 3\\n' > %s/seq/in.csv", tmp), 0);
    CU_ASSERT_EQUAL(sh(&out, "%s tests/e2e/seq/tags.fl -q --epochs 1 --predict %s/seq/in.csv 2>&1", flrun, tmp), 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "--predict: 'softmax_0.tmp_0' has [6, 3] for a batch of 3 sequences; a prediction "
                                       "is one row per input row"));
    free(out);
}

/* Writes text to tmp/name. */
static void put_file(const char *name, const char *text) {
    char p[512];
    snprintf(p, sizeof p, "%s/%s", tmp, name);
    FILE *f = fopen(p, "w");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    fputs(text, f);
    fclose(f);
}

/* int64 ids read from a file stay exact to what Print shows and what errors name, beyond 2^53
 * where a double would round them (2^53 + 1 printed as 2^53). */
static void test_int64_ids(void) {
    char *out = NULL;
    put_file("ids.csv", "9007199254740993,1\n3,2\n");
    put_file("max.csv", "9223372036854775807,1\n");
    put_file("ids.fl", "import fluid\n"
                       "from fluid import layers, io\n"
                       "ids = layers.data(name='ids', shape=[1], dtype='int64')\n"
                       "y = layers.data(name='y', shape=[1], dtype='float32')\n"
                       "layers.Print(ids, message='ids')\n"
                       "loss = layers.mean(layers.embedding(ids, size=[10, 2]))\n"
                       "fluid.train(reader=io.csv(fluid.flag('data', 'ids.csv'), columns={'ids': [0], 'y': [1]}),\n"
                       "            batch_size=2, epochs=1, fetch={'loss': loss})\n");
    CU_ASSERT_EQUAL(sh(&out, "%s %s/ids.fl -q 2>&1", flrun, tmp), 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "ids ids [2, 1] int64: 9007199254740993 3\n"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "Ids 'ids' [2, 1] row 0 is 9007199254740993, outside [0, 10)"));
    free(out);
    CU_ASSERT_EQUAL(sh(&out, "%s %s/ids.fl -q -D data=max.csv 2>&1", flrun, tmp), 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "ids ids [1, 1] int64: 9223372036854775807\n"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "Ids 'ids' [1, 1] row 0 is 9223372036854775807, outside [0, 10)"));
    free(out);
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: test_train FLRUN FLC\n");
        return 2;
    }
    flrun = argv[1];
    flc = argv[2];
    snprintf(tmp, sizeof tmp, "%s/fl_test_train.XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(tmp)) return 1;
    static const FlTestCase cases[] = {
        {"fit_a_line", test_fit_a_line},
        {"digits", test_digits},
        {"save_load_predict", test_save_load_predict},
        {"bad_input", test_bad_input},
        {"save_targets", test_save_targets},
        {"no_input_overwritten", test_no_input_overwritten},
        {"outputs_apart", test_outputs_apart},
        {"var_names", test_var_names},
        {"early_failures", test_early_failures},
        {"log_on_failure", test_log_on_failure},
        {"save_killed", test_save_killed},
        {"relocated", test_relocated},
        {"sequences", test_sequences},
        {"int64_ids", test_int64_ids},
    };
    int rc = fl_test_run("train", NULL, NULL, cases, sizeof cases / sizeof cases[0]);
    sh(NULL, "rm -rf %s", tmp);
    return rc;
}
