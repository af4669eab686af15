/* test_train: flrun trains the acceptance programs on real data to the figures they should reach,
 * deterministically, saves/loads/predicts, and fails cleanly on bad input.
 *   test_train FLRUN     (run from the repository root) */
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

static const char *flrun;
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
    /* the first 12 rows of the housing file, header lines included, features only */
    CU_ASSERT_EQUAL_FATAL(sh(NULL, "head -n 14 examples/data/boston_house_prices.csv | cut -d, -f1-13 > %s", feat), 0);
    char *direct = NULL, *loaded = NULL, *out = NULL;
    CU_ASSERT_EQUAL(sh(&direct, "%s examples/fit_a_line.fl -q --epochs 5 --save %s --predict %s", flrun, dir, feat), 0);
    CU_ASSERT_EQUAL(sh(&loaded, "%s examples/fit_a_line.fl -q --load %s --predict %s", flrun, dir, feat), 0);
    CU_ASSERT_STRING_EQUAL(direct, loaded);
    int lines = 0;
    for (const char *p = direct; *p; p++) lines += *p == '\n';
    CU_ASSERT_EQUAL(lines, 12);
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

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: test_train FLRUN\n");
        return 2;
    }
    flrun = argv[1];
    snprintf(tmp, sizeof tmp, "%s/fl_test_train.XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(tmp)) return 1;
    static const FlTestCase cases[] = {
        {"fit_a_line", test_fit_a_line},
        {"digits", test_digits},
        {"save_load_predict", test_save_load_predict},
        {"bad_input", test_bad_input},
    };
    int rc = fl_test_run("train", NULL, NULL, cases, sizeof cases / sizeof cases[0]);
    sh(NULL, "rm -rf %s", tmp);
    return rc;
}
