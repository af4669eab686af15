/* bench_dispatch.c: the executor's per-op cost on a chain of 10,000 tiny ops (scale on a [1]
 * tensor, each reading the previous op's output), against the bare kernel calls, and with a
 * timeline recorded (flrun --timeline: a span per op). Prints figures; never fails on time
 * (benchmarks are not tests). */
#include <stdio.h>
#include <time.h>

#include "runtime/core/exec.h"
#include "runtime/kernels/kernels.h"

enum { OPS = 10000, REPS = 50 };

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(void) {
    FlProgram *p = fl_ir_program_new();
    FlBlock *b0 = fl_ir_block(p, 0);
    char prev[32] = "x", cur[32];
    FlVarDesc *x = fl_ir_var_add(b0, "x");
    fl_ir_var_set_shape(x, 1, (int64_t[]){1});
    for (int i = 0; i < OPS; i++) {
        snprintf(cur, sizeof cur, "t%d", i);
        FlVarDesc *v = fl_ir_var_add(b0, cur);
        fl_ir_var_set_shape(v, 1, (int64_t[]){1});
        FlOpDesc *op = fl_ir_op_append(b0, "scale");
        fl_ir_op_add_input(op, "X", prev);
        fl_ir_op_add_output(op, "Out", cur);
        fl_ir_op_set_float(op, "scale", 1.0);
        fl_ir_op_set_float(op, "bias", 1.0);
        snprintf(prev, sizeof prev, "%s", cur);
    }
    FlErr e;
    FlExec *ex;
    if (fl_exec_new(p, NULL, 0, NULL, &ex, &e)) {
        fprintf(stderr, "%s\n", e.msg);
        return 1;
    }
    FlScope *s = fl_scope_new(NULL);
    FlTensor in = FL_TENSOR_INIT, out = FL_TENSOR_INIT;
    if (fl_tensor_from(&e, &in, FL_DT_FLOAT32, 1, (int64_t[]){1}, (double[]){0})) return 1;
    FlExecFeed f = {"x", &in};
    const char *fetch = prev;
    double best = 1e9;
    for (int r = 0; r < REPS; r++) {
        double t0 = now();
        if (fl_exec_run(ex, s, &f, 1, &fetch, &out, 1, 0, &e)) {
            fprintf(stderr, "%s\n", e.msg);
            return 1;
        }
        double t = now() - t0;
        if (t < best) best = t;
    }
    double check = fl_tensor_get(&out, 0);
    /* the kernels alone, same chain */
    double kbest = 1e9;
    for (int r = 0; r < REPS; r++) {
        FlTensor a = FL_TENSOR_INIT, b = FL_TENSOR_INIT;
        fl_tensor_ref(&a, &in);
        double t0 = now();
        for (int i = 0; i < OPS; i++) {
            if (fl_kernel_scale(&e, &a, 1.0, 1.0, true, &b)) return 1;
            FlTensor t = a;
            a = b;
            b = t;
        }
        double t = now() - t0;
        if (t < kbest) kbest = t;
        fl_tensor_fini(&a);
        fl_tensor_fini(&b);
    }
    printf("chain of %d scale ops on [1] (best of %d runs): %.1f ns/op through the executor, "
           "%.1f ns/op kernel alone, dispatch overhead %.1f ns/op (result %g)\n",
           OPS, REPS, best / OPS * 1e9, kbest / OPS * 1e9, (best - kbest) / OPS * 1e9, check);
    /* the same chain recording a span per op (room for every run's spans) */
    FlTrace *tr = fl_trace_new((size_t)OPS * REPS);
    FlExec *tex;
    if (fl_exec_new(p, NULL, 0, &(FlExecOptions){.trace = tr}, &tex, &e)) {
        fprintf(stderr, "%s\n", e.msg);
        return 1;
    }
    double tbest = 1e9;
    for (int r = 0; r < REPS; r++) {
        double t0 = now();
        if (fl_exec_run(tex, s, &f, 1, &fetch, &out, 1, 0, &e)) {
            fprintf(stderr, "%s\n", e.msg);
            return 1;
        }
        double t = now() - t0;
        if (t < tbest) tbest = t;
    }
    printf("with a timeline (a span per op, %zu recorded): %.1f ns/op, %.1f ns/op more\n", fl_trace_count(tr),
           tbest / OPS * 1e9, (tbest - best) / OPS * 1e9);
    fl_exec_free(tex);
    fl_trace_free(tr);
    fl_tensor_fini(&in);
    fl_tensor_fini(&out);
    fl_scope_free(s);
    fl_exec_free(ex);
    fl_ir_program_free(p);
    return 0;
}
