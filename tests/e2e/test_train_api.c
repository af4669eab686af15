/* test_train_api: the training driver (runtime/train/train.h) called from C as an embedder would:
 * fit_a_line trained for 2 epochs reports 21 steps an epoch (405 rows, batch 20), test figures
 * over the 101 test rows that fl_train_evaluate reproduces, the same figures as flrun's log
 * (flrun drives this module), and predictions for a features file.
 *   test_train_api FLRUN     (run from the repository root) */
#define _GNU_SOURCE
#include <CUnit/Basic.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compiler/ir/ir.h"
#include "lang/eval.h"
#include "runtime/train/train.h"
#include "tests/cunit.h"

static const char *flrun;

typedef struct Seen {
    int train_rows, test_rows, epochs, steps;
    double last_test, last_train_loss;
    int64_t last_step;
} Seen;

static FlStatus on_row(void *ctx, const char *phase, int64_t epoch, int64_t step, const double *v, FlErr *e) {
    (void)epoch;
    (void)e;
    Seen *s = ctx;
    if (!strcmp(phase, "train")) {
        s->train_rows++;
        s->last_train_loss = v[0];
    } else {
        s->test_rows++;
        s->last_test = v[0];
        s->last_step = step;
    }
    return FL_OK;
}
static void on_step(void *ctx, int64_t epoch, int64_t epochs, size_t b, size_t nb, double loss) {
    (void)epoch, (void)epochs, (void)b, (void)loss;
    Seen *s = ctx;
    s->steps++;
    CU_ASSERT_EQUAL(nb, 21);
}
static void on_epoch(void *ctx, const FlTrainEpoch *ep) {
    Seen *s = ctx;
    s->epochs++;
    CU_ASSERT_EQUAL(ep->epochs, 2);
    CU_ASSERT_EQUAL(ep->rows, 405);
    CU_ASSERT_PTR_NOT_NULL(ep->test);
    CU_ASSERT(ep->test && isfinite(ep->test[0]));
}
static FlStatus stop_at_3(void *ctx, const char *phase, int64_t epoch, int64_t step, const double *v, FlErr *e) {
    (void)ctx, (void)phase, (void)epoch, (void)v;
    return step == 3 ? fl_err(e, "stopped by the hook") : FL_OK;
}

/* The last `test` loss of a --log file. */
static double log_test_loss(const char *path) {
    FILE *f = fopen(path, "r");
    if (!f) return NAN;
    char line[1024];
    double v = NAN;
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, "test,", 5)) {
            char *p = line;
            for (int k = 0; k < 4 && p; k++) p = strchr(p + 1, ',');
            if (p) v = strtod(p + 1, NULL);
        }
    fclose(f);
    return v;
}

static void test_train_evaluate_predict(void) {
    FlBundle *b = NULL;
    FlBuf diag = {0};
    CU_ASSERT_EQUAL_FATAL(fl_compile_file("examples/fit_a_line.fl", NULL, &b, &diag), 0);
    fl_buf_free(&diag);
    FlErr e = {{0}};
    FlLoadedProgram *prog = fl_program_from_bundle_take(b);
    FlExecutor *ex;
    CU_ASSERT_EQUAL_FATAL(fl_executor_new(prog, NULL, &ex, &e), FL_OK);
    FlScope *scope = fl_scope_new(NULL);
    CU_ASSERT_EQUAL_FATAL(fl_executor_run_startup(ex, scope, &e), FL_OK);
    FlTrainer *tr;
    CU_ASSERT_EQUAL_FATAL(fl_train_new(prog, ex, scope, NULL, &tr, &e), FL_OK);
    CU_ASSERT_EQUAL(fl_train_fetch_count(tr), 1);
    CU_ASSERT_STRING_EQUAL(fl_train_fetch_name(tr, 0), "loss");
    CU_ASSERT_EQUAL(fl_data_rows(fl_train_dataset(tr, false)), 405);
    CU_ASSERT_EQUAL(fl_data_rows(fl_train_dataset(tr, true)), 101);
    /* a prediction input opened before training, as flrun does */
    FlTrainPredictInput *in;
    CU_ASSERT_EQUAL_FATAL(fl_train_predict_open(tr, "examples/data/boston_features.csv", NULL, &in, &e), FL_OK);

    Seen s = {0};
    FlTrainOptions o = FL_TRAIN_OPTIONS_INIT;
    o.epochs = 2;
    FlTrainHooks h = {.ctx = &s, .step = on_step, .row = on_row, .epoch = on_epoch};
    CU_ASSERT_EQUAL_FATAL(fl_train_run(tr, &o, &h, &e), FL_OK);
    CU_ASSERT_EQUAL(s.train_rows, 42);
    CU_ASSERT_EQUAL(s.steps, 42);
    CU_ASSERT_EQUAL(s.test_rows, 2);
    CU_ASSERT_EQUAL(s.epochs, 2);
    CU_ASSERT_EQUAL(s.last_step, 42);
    /* evaluating again gives the last epoch's test figure: nothing changed the scope since */
    double fig, rows;
    CU_ASSERT_EQUAL(fl_train_evaluate(tr, fl_train_dataset(tr, true), 7, &fig, &rows, &e), FL_OK);
    CU_ASSERT_EQUAL(rows, 101);
    CU_ASSERT(fabs(fig - s.last_test) <= 1e-5 * fabs(s.last_test));
    /* flrun, which drives this module, logs the same test loss */
    char log[] = "/tmp/fl_test_train_api.XXXXXX";
    int fd = mkstemp(log);
    CU_ASSERT_FATAL(fd >= 0);
    close(fd);
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "%s examples/fit_a_line.fl -q --epochs 2 --log %s", flrun, log);
    CU_ASSERT_EQUAL(system(cmd), 0);
    double logged = log_test_loss(log);
    CU_ASSERT(fabs(logged - s.last_test) <= 1e-6 * fabs(s.last_test));
    remove(log);

    FlTrainPredictions p;
    CU_ASSERT_EQUAL_FATAL(fl_train_predict(tr, in, &p, &e), FL_OK);
    CU_ASSERT_EQUAL(p.rows, 3);
    CU_ASSERT_EQUAL(p.width, 1);
    CU_ASSERT_FALSE(p.classes);
    for (size_t i = 0; i < p.rows; i++) CU_ASSERT(isfinite(p.values[i]) && p.values[i] > 0 && p.values[i] < 60);
    fl_train_predictions_fini(&p);
    fl_train_predict_input_free(in);

    /* a hook's error stops training with its message */
    o.epochs = 1;
    FlTrainHooks stop = {.row = stop_at_3};
    CU_ASSERT_EQUAL(fl_train_run(tr, &o, &stop, &e), FL_ERROR);
    CU_ASSERT_STRING_EQUAL(fl_error_message(&e), "stopped by the hook");
    /* an unknown --predict-var is found when the input is opened */
    CU_ASSERT_EQUAL(fl_train_predict_open(tr, "examples/data/boston_features.csv", "nope", &in, &e), FL_ERROR);
    CU_ASSERT_PTR_NOT_NULL(strstr(fl_error_message(&e), "'nope'"));
    fl_train_free(tr);
    fl_scope_free(scope);
    fl_executor_free(ex);
    fl_program_free(prog);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: test_train_api FLRUN\n");
        return 2;
    }
    flrun = argv[1];
    static const FlTestCase cases[] = {
        {"train_evaluate_predict", test_train_evaluate_predict},
    };
    return fl_test_run("train_api", NULL, NULL, cases, sizeof cases / sizeof cases[0]);
}
