/* test_train_api: the training driver (runtime/train/train.h) called from C as an embedder would:
 * fit_a_line trained for 2 epochs reports 21 steps an epoch (405 rows, batch 20), test figures
 * over the 101 test rows that fl_train_evaluate reproduces, the same figures as flrun's log
 * (flrun drives this module), and predictions for a features file; a run goes through the run
 * spec's driver program (report ops, the test set's loop of predictions), and a run cut into a
 * plan's global batches of two trainers' batches reports what the local run with their sum does,
 * figure for figure, sequences, test sets and checkpoints' states included.
 *   test_train_api FLRUN     (run from the repository root) */
#define _GNU_SOURCE
#include <CUnit/Basic.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compiler/ir/ir.h"
#include "compiler/ir/train_driver.h"
#include "lang/eval.h"
#include "runtime/core/driver.h"
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

/* A trainer of `file` compiled, its executor and root scope made and its startup run; the caller
 * frees them with close_trainer. */
typedef struct Opened {
    FlLoadedProgram *prog;
    FlExecutor *ex;
    FlScope *scope;
    FlTrainer *tr;
} Opened;

static Opened open_trainer(const char *file) {
    FlBundle *b = NULL;
    FlBuf diag = {0};
    Opened o = {0};
    CU_ASSERT_EQUAL_FATAL(fl_compile_file(file, NULL, &b, &diag), 0);
    fl_buf_free(&diag);
    FlErr e = {{0}};
    o.prog = fl_program_from_bundle_take(b);
    CU_ASSERT_EQUAL_FATAL(fl_executor_new(o.prog, NULL, &o.ex, &e), FL_OK);
    o.scope = fl_scope_new(NULL);
    CU_ASSERT_EQUAL_FATAL(fl_executor_run_startup(o.ex, o.scope, &e), FL_OK);
    CU_ASSERT_EQUAL_FATAL(fl_train_new(o.prog, o.ex, o.scope, NULL, &o.tr, &e), FL_OK);
    return o;
}

static void close_trainer(Opened *o) {
    fl_train_free(o->tr);
    fl_scope_free(o->scope);
    fl_executor_free(o->ex);
    fl_program_free(o->prog);
}

static void test_train_evaluate_predict(void) {
    FlErr e = {{0}};
    Opened op = open_trainer("examples/fit_a_line.fl");
    FlTrainer *tr = op.tr;
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
    close_trainer(&op);
}

/* ---- a local run and a run cut into a plan's global batches report alike ---- */

/* Everything a run reports, as text: the log's rows (%.9g, as flrun writes them), the progress
 * calls and the epochs' figures. */
typedef struct Report {
    FlBuf b;
    size_t n; /* figures */
} Report;

static FlStatus rep_row(void *ctx, const char *phase, int64_t epoch, int64_t step, const double *v, FlErr *e) {
    (void)e;
    Report *r = ctx;
    fl_buf_printf(&r->b, "%s,%lld,%lld", phase, (long long)epoch, (long long)step);
    for (size_t i = 0; i < r->n; i++) fl_buf_printf(&r->b, ",%.9g", v[i]);
    fl_buf_printf(&r->b, "\n");
    return FL_OK;
}
static void rep_step(void *ctx, int64_t epoch, int64_t epochs, size_t b, size_t nb, double loss) {
    fl_buf_printf(&((Report *)ctx)->b, "step %lld/%lld %zu/%zu %.9g\n", (long long)epoch, (long long)epochs, b, nb, loss);
}
static void rep_epoch(void *ctx, const FlTrainEpoch *ep) {
    Report *r = ctx;
    fl_buf_printf(&r->b, "epoch %lld/%lld step %lld rows %.0f", (long long)ep->epoch, (long long)ep->epochs,
                  (long long)ep->step, ep->rows);
    for (size_t i = 0; i < r->n; i++) fl_buf_printf(&r->b, " %.9g", ep->train[i]);
    for (size_t i = 0; ep->test && i < r->n; i++) fl_buf_printf(&r->b, " test %.9g", ep->test[i]);
    fl_buf_printf(&r->b, "\n");
}

/* A checkpoint's state, as text (every `every` steps). */
static FlStatus rep_checkpoint(void *ctx, const FlTrainState *st, bool *stop, FlErr *e) {
    (void)e;
    Report *r = ctx;
    fl_buf_printf(&r->b, "checkpoint step %lld epoch %lld batch %lld seed %llu global %lld rows %lld epoch_rows %.0f",
                  (long long)st->step, (long long)st->epoch, (long long)st->batch, (unsigned long long)st->seed,
                  (long long)st->global_batch, (long long)st->rows, st->epoch_rows);
    for (size_t i = 0; i < st->nfetch; i++) fl_buf_printf(&r->b, " %.9g", st->epoch_sums[i]);
    fl_buf_printf(&r->b, " runs %llu\n", (unsigned long long)st->runs[0]);
    *stop = false;
    return FL_OK;
}

/* What training `file` for `epochs` epochs reports, with a checkpoint every `every` steps (0:
 * none); cut: as one trainer running a plan of two, each with half the run spec's batch (the
 * global batch the run spec's), else as a local run does. */
static char *reported(const char *file, int64_t epochs, int64_t every, bool cut) {
    FlErr e = {{0}};
    Opened op = open_trainer(file);
    FlTrainer *tr = op.tr;
    Report r = {.n = fl_train_fetch_count(tr)};
    FlTrainOptions o = FL_TRAIN_OPTIONS_INIT;
    o.epochs = epochs;
    o.checkpoint_every = every;
    if (cut) {
        int64_t batch = fl_program_bundle(op.prog)->run.batch_size;
        CU_ASSERT_EQUAL_FATAL(batch % 2, 0);
        o.batch_trainers = 2;
        o.batch_size = batch / 2;
    }
    FlTrainHooks h = {.ctx = &r, .step = rep_step, .row = rep_row, .epoch = rep_epoch, .checkpoint = rep_checkpoint};
    CU_ASSERT_EQUAL(fl_train_run(tr, &o, &h, &e), FL_OK);
    close_trainer(&op);
    char *text = strdup(fl_buf_str(&r.b));
    fl_buf_free(&r.b);
    return text;
}

/* a and b word for word, numbers within a relative 1e-6 (the test set is evaluated in batches of
 * the trainer's batch: its means are summed in another order). */
static bool same_reports(const char *a, const char *b) {
    while (*a && *b) {
        char *ea, *eb;
        double x = strtod(a, &ea), y = strtod(b, &eb);
        if (ea != a && eb != b) {
            if (fabs(x - y) > 1e-6 * fmax(fabs(x), fabs(y))) return false;
            a = ea, b = eb;
        } else if (*a++ != *b++) {
            return false;
        }
    }
    return *a == *b;
}

static void check_same(const char *file, int64_t epochs, int64_t every, size_t min_len) {
    char *local = reported(file, epochs, every, false), *cut = reported(file, epochs, every, true);
    CU_ASSERT(strlen(local) >= min_len);
    CU_ASSERT(!every || strstr(local, "checkpoint step"));
    CU_ASSERT(same_reports(local, cut));
    if (!same_reports(local, cut)) fprintf(stderr, "%s: the local run reported\n%s\nthe cut one\n%s", file, local, cut);
    free(local);
    free(cut);
}

static void test_plan_cut_reports_as_local(void) {
    check_same("examples/fit_a_line.fl", 2, 0, 42 * 20);         /* 21 steps an epoch, a test set */
    /* checkpoints, within and at an epoch's end: the same states but the runs, which count the
     * evaluation's batches (of the trainer's batch); e2e_checkpoint and mpi_checkpoint resume them */
    check_same("examples/fit_a_line.fl", 1, 8, 21 * 20);
    check_same("examples/fluid/understand_sentiment.fl", 1, 0, 100); /* sequence feeds */
}

/* The driver a local run runs: the run spec's loop as ops, whose report ops need the report host
 * that fl_train_run gives them. */
static void test_run_spec_driver(void) {
    FlBundle *b = NULL;
    FlBuf diag = {0};
    CU_ASSERT_EQUAL_FATAL(fl_compile_file("examples/fit_a_line.fl", NULL, &b, &diag), 0);
    fl_buf_free(&diag);
    FlErr e = {{0}};
    FlProgram *drv;
    CU_ASSERT_EQUAL_FATAL(fl_ir_train_driver_build(b, FL_LOC_NONE, &drv, &e), FL_OK);
    FlBuf text = {0};
    fl_ir_show_program(drv, "driver", b, &text);
    /* the compiled bundle keeps that driver, its ops at the fluid.train call (line 17) */
    CU_ASSERT_TRUE(fl_ir_bundle_trains(b));
    CU_ASSERT_PTR_NOT_NULL_FATAL(b->driver);
    FlBuf kept = {0};
    fl_ir_show_program(b->driver, "driver", b, &kept);
    CU_ASSERT_PTR_NOT_NULL(strstr(fl_buf_str(&kept), "op report_open  Epochs=[epochs] BatchSize=[batch_size] "
                                                     "Seed=[seed] -> Out=[report]  @ fit_a_line.fl:17:1\n"));
    CU_ASSERT_EQUAL(b->driver->blocks.len, drv->blocks.len);
    for (size_t k = 0; k < drv->blocks.len && k < b->driver->blocks.len; k++) {
        CU_ASSERT_EQUAL(b->driver->blocks.data[k]->ops.len, drv->blocks.data[k]->ops.len);
        for (size_t i = 0; i < drv->blocks.data[k]->ops.len && i < b->driver->blocks.data[k]->ops.len; i++)
            CU_ASSERT_STRING_EQUAL(b->driver->blocks.data[k]->ops.data[i]->type, drv->blocks.data[k]->ops.data[i]->type);
    }
    fl_buf_free(&kept);
    /* watched vars (FlTrainOptions.watch): the step fetches the watched var after the run spec's and reports it as a figure;
     * the evaluation is left as it was */
    FlProgram *w = fl_ir_program_clone(b->driver);
    static const char *const lr[] = {"learning_rate_0"};
    CU_ASSERT_EQUAL_FATAL(fl_ir_train_driver_watch(w, b, lr, 1, &e), FL_OK);
    FlBuf wt = {0};
    fl_ir_show_program(w, "driver", b, &wt);
    CU_ASSERT_PTR_NOT_NULL(strstr(fl_buf_str(&wt), "-> Fetch=[figure_0, figure_1]  {feed_names=[\"x\", \"y\"], "
                                                   "fetch_names=[\"mean_0.tmp_0\", \"learning_rate_0\"], program=\"main\"}"));
    CU_ASSERT_PTR_NOT_NULL(strstr(fl_buf_str(&wt), "op report_step  Report=[report] Figures=[figure_0, figure_1] "
                                                   "Rows=[rows]"));
    CU_ASSERT_PTR_NOT_NULL(strstr(fl_buf_str(&wt), "var figure_1 : float32[1]"));
    CU_ASSERT_PTR_NOT_NULL(strstr(fl_buf_str(&wt), "Fetch=[test_figure_0]  {feed_names=[\"x\", \"y\"], "
                                                   "fetch_names=[\"mean_0.tmp_0\"], predict=true"));
    fl_buf_free(&wt);
    static const char *const none_such[] = {"no_such_var"};
    CU_ASSERT_EQUAL(fl_ir_train_driver_watch(w, b, none_such, 1, &e), FL_ERROR);
    CU_ASSERT_STRING_EQUAL(e.msg, "the fetch 'no_such_var' is not a var of the main program's global block");
    fl_ir_program_free(w);
    FlProgram *other = fl_ir_program_new(); /* a driver with no step (a script's own, empty) */
    CU_ASSERT_EQUAL(fl_ir_train_driver_watch(other, b, lr, 1, &e), FL_ERROR);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "is not fluid.train's loop"));
    fl_ir_program_free(other);
    static const char *const ops[] = {"op option", "op report_open", "op while", "op report_next", "op run_program",
                                      "op report_step", "op report_train_end", "op report_test", "op report_epoch",
                                      "op increment", "predict=true", "test=true", "GlobalRows=[global_rows]"};
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
        CU_ASSERT_PTR_NOT_NULL(strstr(fl_buf_str(&text), ops[i]));
        if (!strstr(fl_buf_str(&text), ops[i])) fprintf(stderr, "no '%s' in\n%s", ops[i], fl_buf_str(&text));
    }
    fl_buf_free(&text);
    FlLoadedProgram *prog = fl_program_from_bundle_take(b);
    FlExecutor *ex;
    CU_ASSERT_EQUAL_FATAL(fl_executor_new(prog, NULL, &ex, &e), FL_OK);
    FlScope *scope = fl_scope_new(NULL);
    int code = -1;
    CU_ASSERT_EQUAL(fl_executor_run_driver_program(ex, drv, scope, &code, &e), FL_ERROR);
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "report_open"));
    CU_ASSERT_PTR_NOT_NULL(strstr(e.msg, "a report op runs only where a training reports its figures"));
    fl_ir_program_free(drv);
    /* a bundle without a run spec has no such driver */
    FlBundle *none = fl_ir_bundle_new();
    CU_ASSERT_EQUAL(fl_ir_train_driver_build(none, FL_LOC_NONE, &drv, &e), FL_ERROR);
    CU_ASSERT_STRING_EQUAL(e.msg, "the run spec has no reader: nothing to train on");
    fl_ir_bundle_free(none);
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
        {"plan_cut_reports_as_local", test_plan_cut_reports_as_local},
        {"run_spec_driver", test_run_spec_driver},
    };
    return fl_test_run("train_api", NULL, NULL, cases, sizeof cases / sizeof cases[0]);
}
