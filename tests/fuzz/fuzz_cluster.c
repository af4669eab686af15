/* fuzz_cluster.c: libFuzzer target for `flc simulate`'s inputs (compiler/simulate.c): the cluster
 * spec parser, the calibration parser, and the step model on what they accept.
 *
 * Input: a cluster spec (text, `;` or newlines between items); after a line "%%", a calibration
 * that replaces the fixed one (tests/compiler/simulate/calib.txt) when it parses. The input's
 * length picks the plan: the MLP 784-512-512-10 (tests/bench/simulate/mlp784.fl) transpiled for
 * 2 pservers and 2 trainers, or for 1 pserver and 3 trainers.
 * Oracle: any text parses or fails with a message that names the place ("spec.txt:LINE: ...",
 * "spec.txt: ...", "cal.txt..."); a spec that parses holds only figures within the model's
 * bounds (simulate.h); the model on it ends (libFuzzer's -timeout catches a loop) with a result
 * or an error, and a result's step time is finite and not negative, its critical path and the
 * cores' wait adding up to it, its report printable. Nothing crashes or leaks.
 *
 * Run from the repository root (the plan's program and the calibration are read from there).
 * Built with clang -fsanitize=fuzzer,address,undefined when FL_FUZZ is on (tests/fuzz/
 * cluster.cmake); fuzz_driver.c replays the corpus and the kept crashers in an ordinary build
 * (fuzz_cluster_corpus).
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/simulate.h"
#include "compiler/transpile.h"
#include "lang/eval.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static FlBundle *mlp;
static FlPlan *plans[2];
static FlSimCalib fixed;

static void fini(void) {
    for (int i = 0; i < 2; i++) fl_ir_plan_free(plans[i]);
    fl_ir_bundle_free(mlp);
    fl_sim_calib_fini(&fixed);
}

static void init(void) {
    FlCompileOptions opt = {0};
    FlBuf diag = {0};
    if (fl_compile_file("tests/bench/simulate/mlp784.fl", &opt, &mlp, &diag) != 0)
        fl_panic(__FILE__, __LINE__, "run from the repository root: %s", fl_buf_str(&diag));
    fl_buf_free(&diag);
    FlErr e;
    static const int64_t pt[2][2] = {{2, 2}, {1, 3}};
    for (int i = 0; i < 2; i++) {
        FlTranspileOptions o = {.pservers = pt[i][0], .trainers = pt[i][1], .mode = FL_TRANSPILE_SYNC};
        if (fl_transpile(mlp, &o, &plans[i], &e) != FL_OK) fl_panic(__FILE__, __LINE__, "transpile: %s", e.msg);
    }
    if (fl_sim_calib_load("tests/compiler/simulate/calib.txt", &fixed, &e) != FL_OK)
        fl_panic(__FILE__, __LINE__, "calibration: %s", e.msg);
    atexit(fini);
}

static bool within(double v, double lo, double hi) { return v >= lo && v <= hi; }

/* Every figure of a parsed spec is within the model's bounds (or 0: not given). */
static void check_bounds(const FlSimCluster *c) {
    for (size_t i = 0; i < c->hosts.len; i++) {
        const FlSimHost *h = &c->hosts.data[i];
        FL_ASSERT(h->bandwidth == 0 || within(h->bandwidth, FL_SIM_RATE_MIN, FL_SIM_RATE_MAX));
        FL_ASSERT(within(h->latency, 0, FL_SIM_TIME_MAX) && within(h->msgcost, 0, FL_SIM_TIME_MAX));
        FL_ASSERT(within(h->compute, FL_SIM_COMPUTE_MIN, FL_SIM_COMPUTE_MAX));
    }
    for (size_t i = 0; i < c->machines.len; i++) {
        const FlSimMachine *m = &c->machines.data[i];
        FL_ASSERT(m->switchrate == 0 || within(m->switchrate, FL_SIM_RATE_MIN, FL_SIM_RATE_MAX));
        FL_ASSERT(m->wakeup == -1 || within(m->wakeup, 0, FL_SIM_TIME_MAX));
        FL_ASSERT(m->pollwait == -1 || within(m->pollwait, 0, FL_SIM_TIME_MAX));
    }
    FL_ASSERT(c->local_bandwidth == 0 || within(c->local_bandwidth, FL_SIM_RATE_MIN, FL_SIM_RATE_MAX));
    FL_ASSERT(within(c->local_latency, 0, FL_SIM_TIME_MAX));
}

static void check_calib(const FlSimCalib *c) {
    for (size_t i = 0; i < c->gemm.len; i++)
        FL_ASSERT(within(c->gemm.data[i].gflops, FL_SIM_CALIB_RATE_MIN, FL_SIM_CALIB_RATE_MAX));
    FL_ASSERT(within(c->elementwise_gbps, FL_SIM_CALIB_RATE_MIN, FL_SIM_CALIB_RATE_MAX));
    FL_ASSERT(within(c->memcpy_gbps, FL_SIM_CALIB_RATE_MIN, FL_SIM_CALIB_RATE_MAX));
    FL_ASSERT(within(c->op_overhead_us, 0, FL_SIM_CALIB_US_MAX));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!mlp) init();
    char *text = fl_xmalloc(size + 1);
    memcpy(text, data, size);
    text[size] = 0;
    if (strlen(text) != size) { /* a NUL: flc refuses such a file before parsing ("a NUL byte") */
        free(text);
        return 0;
    }
    char *cal_text = NULL;
    char *sep = strstr(text, "\n%%\n");
    if (sep) {
        *sep = 0;
        cal_text = sep + 4;
    }
    FlErr e = {{0}};
    FlSimCalib own, *cal = &fixed;
    if (cal_text) {
        if (fl_sim_calib_parse(cal_text, "cal.txt", &own, &e) == FL_OK) {
            check_calib(&own);
            cal = &own;
        } else {
            FL_ASSERT(strncmp(e.msg, "cal.txt", 7) == 0);
        }
    }
    FlSimCluster cl;
    if (fl_sim_cluster_parse(text, "spec.txt", &cl, &e) != FL_OK) {
        FL_ASSERT(strncmp(e.msg, "spec.txt", 8) == 0);
    } else {
        check_bounds(&cl);
        const FlPlan *plan = plans[size % 2];
        FlSimOptions o = {.batch = 64, .piece = 1048576};
        FlSimResult r;
        if (fl_sim_run(plan, cal, &cl, &o, &r, &e) == FL_OK) {
            FL_ASSERT(isfinite(r.step_s) && r.step_s >= 0);
            double sum = r.compute_s + r.transfer_s + r.update_s + r.wait_s + r.cores_s;
            FL_ASSERT(fabs(sum - r.step_s) <= 1e-9 * fmax(1, r.step_s));
            FlBuf out = {0};
            fl_sim_report(plan, &cl, &o, &r, &out);
            FL_ASSERT(out.len > 0);
            fl_buf_free(&out);
            fl_sim_result_fini(&r);
        }
        fl_sim_cluster_fini(&cl);
    }
    if (cal == &own) fl_sim_calib_fini(&own);
    free(text);
    return 0;
}
