/* ops_report.c: the adapters of fluid.train's report ops on the driver (compiler/ops/report.def;
 * docs/driver.md, "fluid.train over the driver"), over the report host of report_host.h.
 *
 *   option        Out = the host's value of the run's option name, else value (int64 [1])
 *   report_open   Epochs BatchSize Seed -> Out: the host's training begun; Out a raw var naming it
 *   report_next   Report Epoch -> Out* Rows GlobalRows Step Ok: the next batch of the epoch (test:
 *                 of its evaluation), from the host
 *   report_step   Report Figures* Rows: the step's figures to the host
 *   report_train_end  Report Epoch: the end of the epoch's training to the host
 *   report_test   Report Figures* Rows: an evaluation batch's figures to the host
 *   report_epoch  Report Epoch: the epoch's end to the host
 *
 * Without a host (a driver run by fl_executor_run_driver alone) option gives its value and the
 * other ops are an error naming what runs them.
 */
#include <stdlib.h>
#include <string.h>

#include "runtime/core/exec_impl.h"
#include "runtime/core/report_host.h"

void fl_report_host_attach(FlScope *root, const FlReportHost *h) {
    fl_var_set_object(fl_scope_var(root, FL_REPORT_HOST_VAR), (void *)h, NULL);
}

const FlReportHost *fl_report_host_find(FlScope *s) {
    FlVar *v = fl_scope_find(s, FL_REPORT_HOST_VAR);
    return v ? fl_var_get_object(v) : NULL;
}

static const FlReportHost *need_host(RunCtx *rc, const ExecOp *op, FlScope *s) {
    const FlReportHost *h = fl_report_host_find(s);
    if (!h) fl_exec_op_error(rc, op, "a report op runs only where a training reports its figures (flrun, fl_train_run)");
    return h;
}

/* The one value of the int64 input slot `slot`. */
static FlStatus int_in(RunCtx *rc, const ExecOp *op, FlScope *s, int slot, int64_t *out) {
    *out = 0; /* set on every path: gcc -O2 cannot follow the status to the caller's use */
    const ArgRef *a = fl_exec_in_args(op, slot);
    FlVar *v = fl_exec_nin(op, slot) ? fl_exec_var_read(s, a) : NULL;
    FlTensor t = FL_TENSOR_INIT;
    if (!v || !fl_var_get_tensor(v, &t))
        return fl_exec_op_error(rc, op, "'%s' holds no tensor", fl_exec_nin(op, slot) ? a->name : "?");
    bool one = fl_tensor_numel(&t) == 1;
    if (one) *out = (int64_t)fl_tensor_get(&t, 0);
    fl_tensor_fini(&t);
    return one ? FL_OK : fl_exec_op_error(rc, op, "'%s' is not one number", a->name);
}

static FlStatus set_int(RunCtx *rc, const ExecOp *op, FlScope *s, int slot, FlDType dt, int64_t val) {
    FlTensor t = FL_TENSOR_INIT;
    int64_t one = 1;
    double d = (double)val;
    FlErr e;
    if (fl_tensor_from(&e, &t, dt, 1, &one, &d)) return fl_exec_op_error(rc, op, "%s", e.msg);
    fl_var_take_tensor(fl_exec_var_write(s, fl_exec_out_args(op, slot)), &t);
    return FL_OK;
}

/* ---------------------------------------------------------------- option */

static FlStatus run_option(RunCtx *rc, const ExecOp *op, FlScope *s) {
    const FlReportHost *h = fl_report_host_find(s);
    int64_t v = fl_exec_attr_int(op, "value");
    FlErr e;
    if (h && h->option(h->ctx, fl_exec_attr_string(op, "name"), v, &v, &e) != FL_OK)
        return fl_exec_op_error(rc, op, "%s", e.msg);
    return set_int(rc, op, s, FL_OUT_option_Out, FL_DT_INT64, v);
}
FL_CONTROL_ADAPTER(option, NULL, run_option);

/* ---------------------------------------------------------------- report_open */

static FlStatus run_report_open(RunCtx *rc, const ExecOp *op, FlScope *s) {
    const FlReportHost *h = need_host(rc, op, s);
    int64_t epochs, batch, seed; /* int_in sets each, also when it fails */
    if (!h || int_in(rc, op, s, FL_IN_report_open_Epochs, &epochs) || int_in(rc, op, s, FL_IN_report_open_BatchSize, &batch) ||
        int_in(rc, op, s, FL_IN_report_open_Seed, &seed))
        return FL_ERROR;
    FlErr e;
    if (h->open(h->ctx, epochs, batch, seed, &e) != FL_OK) return fl_exec_op_error(rc, op, "%s", e.msg);
    fl_var_set_object(fl_exec_var_write(s, fl_exec_out_args(op, FL_OUT_report_open_Out)), (void *)h, NULL);
    return FL_OK;
}
FL_CONTROL_ADAPTER(report_open, NULL, run_report_open);

/* The host the Report input names (report_open's). */
static const FlReportHost *report_in(RunCtx *rc, const ExecOp *op, FlScope *s, int slot) {
    FlVar *v = fl_exec_var_read(s, fl_exec_in_args(op, slot));
    const FlReportHost *h = v ? fl_var_get_object(v) : NULL;
    if (!h) fl_exec_op_error(rc, op, "Report holds no report (report_open has not run)");
    return h;
}

/* ---------------------------------------------------------------- report_next */

static FlStatus run_report_next(RunCtx *rc, const ExecOp *op, FlScope *s) {
    const FlReportHost *h = report_in(rc, op, s, FL_IN_report_next_Report);
    int64_t epoch, rows = 0, global = 0, step = 0;
    if (!h || int_in(rc, op, s, FL_IN_report_next_Epoch, &epoch)) return FL_ERROR;
    size_t n = (size_t)fl_exec_nout(op, FL_OUT_report_next_Out);
    FlTensor *t = fl_xcalloc(n + 1, sizeof *t);
    for (size_t i = 0; i < n; i++) t[i] = (FlTensor)FL_TENSOR_INIT;
    bool ok = false;
    FlErr e;
    FlStatus st = h->next(h->ctx, epoch, fl_exec_attr_bool(op, "test"), t, n, &rows, &global, &step, &ok, &e);
    if (st != FL_OK) st = fl_exec_op_error(rc, op, "%s", e.msg);
    const ArgRef *outs = fl_exec_out_args(op, FL_OUT_report_next_Out);
    for (size_t i = 0; i < n; i++) {
        if (st == FL_OK && ok) fl_var_take_tensor(fl_exec_var_write(s, &outs[i]), &t[i]);
        fl_tensor_fini(&t[i]);
    }
    free(t);
    if (st != FL_OK || set_int(rc, op, s, FL_OUT_report_next_Rows, FL_DT_INT64, rows) ||
        set_int(rc, op, s, FL_OUT_report_next_GlobalRows, FL_DT_INT64, global) ||
        set_int(rc, op, s, FL_OUT_report_next_Step, FL_DT_INT64, step))
        return FL_ERROR;
    return set_int(rc, op, s, FL_OUT_report_next_Ok, FL_DT_BOOL, ok);
}
FL_CONTROL_ADAPTER(report_next, NULL, run_report_next);

/* ---------------------------------------------------------------- report_step, report_test */

typedef FlStatus (*FiguresFn)(void *ctx, const FlTensor *figures, size_t n, int64_t rows, FlErr *e);

/* The figures of Figures (slot `figs_slot`) over Rows (slot `rows_slot`) to the host's fn. */
static FlStatus figures_to(RunCtx *rc, const ExecOp *op, FlScope *s, const FlReportHost *h, FiguresFn fn,
                           int figs_slot, int rows_slot) {
    int64_t rows;
    if (!h || int_in(rc, op, s, rows_slot, &rows)) return FL_ERROR;
    size_t n = (size_t)fl_exec_nin(op, figs_slot);
    const ArgRef *figs = fl_exec_in_args(op, figs_slot);
    FlTensor *t = fl_xcalloc(n + 1, sizeof *t);
    FlStatus st = FL_OK;
    for (size_t i = 0; i < n; i++) {
        t[i] = (FlTensor)FL_TENSOR_INIT;
        FlVar *v = fl_exec_var_read(s, &figs[i]);
        if (st == FL_OK && (!v || !fl_var_get_tensor(v, &t[i])))
            st = fl_exec_op_error(rc, op, "'%s' holds no tensor", figs[i].name);
    }
    FlErr e;
    if (st == FL_OK && fn(h->ctx, t, n, rows, &e) != FL_OK) st = fl_exec_op_error(rc, op, "%s", e.msg);
    for (size_t i = 0; i < n; i++) fl_tensor_fini(&t[i]);
    free(t);
    return st;
}

static FlStatus run_report_step(RunCtx *rc, const ExecOp *op, FlScope *s) {
    const FlReportHost *h = report_in(rc, op, s, FL_IN_report_step_Report);
    return figures_to(rc, op, s, h, h ? h->step : NULL, FL_IN_report_step_Figures, FL_IN_report_step_Rows);
}
FL_CONTROL_ADAPTER(report_step, NULL, run_report_step);

static FlStatus run_report_test(RunCtx *rc, const ExecOp *op, FlScope *s) {
    const FlReportHost *h = report_in(rc, op, s, FL_IN_report_test_Report);
    return figures_to(rc, op, s, h, h ? h->test : NULL, FL_IN_report_test_Figures, FL_IN_report_test_Rows);
}
FL_CONTROL_ADAPTER(report_test, NULL, run_report_test);

/* ---------------------------------------------------------------- report_train_end, report_epoch */

typedef FlStatus (*EpochFn)(void *ctx, int64_t epoch, FlErr *e);

static FlStatus epoch_to(RunCtx *rc, const ExecOp *op, FlScope *s, const FlReportHost *h, EpochFn fn, int slot) {
    int64_t epoch;
    if (!h || int_in(rc, op, s, slot, &epoch)) return FL_ERROR;
    FlErr e;
    if (fn(h->ctx, epoch, &e) != FL_OK) return fl_exec_op_error(rc, op, "%s", e.msg);
    return FL_OK;
}

static FlStatus run_report_train_end(RunCtx *rc, const ExecOp *op, FlScope *s) {
    const FlReportHost *h = report_in(rc, op, s, FL_IN_report_train_end_Report);
    return epoch_to(rc, op, s, h, h ? h->train_end : NULL, FL_IN_report_train_end_Epoch);
}
FL_CONTROL_ADAPTER(report_train_end, NULL, run_report_train_end);

static FlStatus run_report_epoch(RunCtx *rc, const ExecOp *op, FlScope *s) {
    const FlReportHost *h = report_in(rc, op, s, FL_IN_report_epoch_Report);
    return epoch_to(rc, op, s, h, h ? h->epoch : NULL, FL_IN_report_epoch_Epoch);
}
FL_CONTROL_ADAPTER(report_epoch, NULL, run_report_epoch);
