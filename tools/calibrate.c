/* calibrate.c: `flc calibrate` (calibrate.h): each figure is timed over repeated calls until
 * CAL_ROUND seconds have passed, the median of CAL_ROUNDS rounds (the machine's usual load).
 * The byte counts follow the model's rule (compiler/simulate.c): an op touches the bytes of
 * every input and output it names.
 */
#define _GNU_SOURCE
#include "tools/calibrate.h"

#include <cblas.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "compiler/ir/ir.h"
#include "compiler/ops.h"
#include "runtime/api.h"
#include "runtime/kernels/kernels.h"
#include "runtime/tensor.h"

#define CAL_ROUND 0.03 /* seconds per round */
#define CAL_ROUNDS 5

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

typedef FlStatus (*Work)(void *ctx, FlErr *e);

/* Seconds per call of fn: the median of CAL_ROUNDS rounds (a machine's usual load, not its
 * quietest moment: jobs run under the usual one). */
static FlStatus timeit(Work fn, void *ctx, double *med, FlErr *e) {
    double r[CAL_ROUNDS];
    if (fn(ctx, e) != FL_OK) return FL_ERROR; /* warm-up */
    for (int k = 0; k < CAL_ROUNDS; k++) {
        int64_t n = 0;
        double t0 = now(), t;
        do {
            if (fn(ctx, e) != FL_OK) return FL_ERROR;
            n++;
            t = now() - t0;
        } while (t < CAL_ROUND);
        r[k] = t / (double)n;
        for (int j = k; j > 0 && r[j] < r[j - 1]; j--) { /* insertion sort */
            double x = r[j];
            r[j] = r[j - 1];
            r[j - 1] = x;
        }
    }
    *med = r[CAL_ROUNDS / 2];
    return FL_OK;
}

typedef struct Bin {
    FlTensor x, y, out;
} Bin;

static FlStatus do_mul(void *c, FlErr *e) {
    Bin *b = c;
    return fl_kernel_mul(e, &b->x, &b->y, 1, 1, &b->out);
}
static FlStatus do_sgd(void *c, FlErr *e) {
    Bin *b = c; /* x: param (updated in place), y: grad, out: learning rate */
    return fl_kernel_sgd(e, &b->x, &b->y, &b->out, &b->x);
}
typedef struct Cpy {
    char *a, *b;
    size_t n;
} Cpy;
static FlStatus do_copy(void *c, FlErr *e) {
    (void)e;
    Cpy *k = c;
    memcpy(k->b, k->a, k->n);
    k->a[0]++;
    return FL_OK;
}
typedef struct Run {
    FlExecutor *ex;
    FlScope *scope;
    FlFetch f;
} Run;
static FlStatus do_run(void *c, FlErr *e) {
    Run *r = c;
    return fl_executor_run(r->ex, r->scope, NULL, 0, &r->f, 1, e);
}

/* Seconds per run of bd's main program (taken) on a scope its startup program filled, fetching
 * one var. */
static FlStatus time_program(FlBundle *bd, const char *fetch, double *secs, FlErr *e) {
    FlLoadedProgram *prog = fl_program_from_bundle_take(bd);
    Run r = {.scope = fl_scope_new(NULL), .f = {.name = fetch, .tensor = FL_TENSOR_INIT}};
    FlStatus st = fl_executor_new(prog, NULL, &r.ex, e);
    if (st == FL_OK) st = fl_executor_run_startup(r.ex, r.scope, e);
    if (st == FL_OK) st = timeit(do_run, &r, secs, e);
    fl_tensor_fini(&r.f.tensor);
    if (r.ex) fl_executor_free(r.ex);
    fl_scope_free(r.scope);
    fl_program_free(prog);
    return st;
}

static void bin_fini(Bin *b) {
    fl_tensor_fini(&b->x);
    fl_tensor_fini(&b->y);
    fl_tensor_fini(&b->out);
}

static FlStatus filled(FlErr *e, FlTensor *t, int ndim, const int64_t *ne) {
    if (fl_tensor_alloc(e, t, FL_DT_FLOAT32, ndim, ne) != FL_OK) return FL_ERROR;
    float *p = fl_tensor_data(t);
    int64_t n = fl_tensor_numel(t);
    for (int64_t i = 0; i < n; i++) p[i] = (float)((i * 7919) % 1000) * 1e-3f - 0.5f;
    return FL_OK;
}

/* Seconds per run of a program of nops + 1 ops on float tensors of shape [rows, cols]: a
 * fill_constant, then relu, scale, elementwise_add and softmax in turn (each reading the
 * previous op's output; elementwise_add also the one before), as a layer's element-wise ops
 * run, allocations included. *bytes: what they read and write (the model's rule). */
static FlStatus run_chain(int64_t rows, int64_t cols, int nops, double *secs, double *bytes, FlErr *e) {
    FlBundle *bd = fl_ir_bundle_new();
    FlBlock *b0 = fl_ir_block(bd->main, 0);
    int64_t shape[2] = {rows, cols};
    double t_bytes = 4.0 * (double)(rows * cols);
    char name[32], prev2[32] = "v0";
    for (int i = 0; i <= nops; i++) {
        snprintf(name, sizeof name, "v%d", i);
        FlVarDesc *v = fl_ir_var_add(b0, name);
        fl_ir_var_set_shape(v, 2, shape);
    }
    FlOpDesc *fill = fl_ir_op_append(b0, "fill_constant");
    fl_ir_op_add_output(fill, "Out", "v0");
    fl_ir_op_set_ints(fill, "shape", shape, 2);
    fl_ir_op_set_float(fill, "value", 0.5);
    *bytes = t_bytes;
    static const char *kinds[4] = {"relu", "scale", "elementwise_add", "softmax"};
    for (int i = 1; i <= nops; i++) {
        const char *k = kinds[(i - 1) % 4];
        FlOpDesc *op = fl_ir_op_append(b0, k);
        snprintf(name, sizeof name, "v%d", i - 1);
        fl_ir_op_add_input(op, "X", name);
        *bytes += 2 * t_bytes;
        if (!strcmp(k, "elementwise_add")) {
            fl_ir_op_add_input(op, "Y", prev2);
            *bytes += t_bytes;
        }
        if (!strcmp(k, "scale")) fl_ir_op_set_float(op, "scale", 0.999);
        snprintf(prev2, sizeof prev2, "%s", name);
        snprintf(name, sizeof name, "v%d", i);
        fl_ir_op_add_output(op, "Out", name);
    }
    char last[32];
    snprintf(last, sizeof last, "v%d", nops);
    return time_program(bd, last, secs, e);
}

/* A slot of an optimizer op that holds one float: the learning rate and Adam's (Adamax's) powers
 * of beta, in and out. Every other slot is a tensor of the parameter's size. */
static bool scalar_slot(const char *name) { return !strcmp(name, "LearningRate") || strstr(name, "Pow") != NULL; }

/* Seconds per run of a program of one optimizer op (info) on n floats, run by the executor as a
 * pserver runs it: its outputs in place of the inputs they update (ParamOut of Param, ...), its
 * state in the scope from the startup program, optional slots left out, attributes at their
 * defaults. *bytes: what it reads and writes (the model's rule: every input and output). */
static FlStatus run_optimizer(const FlOpInfo *info, int64_t n, double *secs, double *bytes, FlErr *e) {
    FlBundle *bd = fl_ir_bundle_new();
    FlBlock *s0 = fl_ir_block(bd->startup, 0), *b0 = fl_ir_block(bd->main, 0);
    FlOpDesc *op = fl_ir_op_append(b0, info->name);
    *bytes = 0;
    for (int io = 0; io < 2; io++) {
        const FlSlotInfo *slots = io ? info->outs : info->ins;
        for (int i = 0; i < (io ? info->nouts : info->nins); i++) {
            const char *slot = slots[i].name;
            if (slots[i].optional) continue;
            char var[64];
            size_t len = strlen(slot);
            /* an output NameOut updates the input Name: the same var */
            if (io && len > 3 && !strcmp(slot + len - 3, "Out")) snprintf(var, sizeof var, "%.*s", (int)(len - 3), slot);
            else snprintf(var, sizeof var, "%s", slot);
            int64_t shape[1] = {scalar_slot(slot) ? 1 : n};
            *bytes += 4.0 * (double)shape[0];
            if (io) fl_ir_op_add_output(op, slot, var);
            else fl_ir_op_add_input(op, slot, var);
            if (fl_ir_var_lookup(bd->main, b0, var)) continue;
            FlVarDesc *v = fl_ir_var_add(b0, var), *sv = fl_ir_var_add(s0, var);
            fl_ir_var_set_shape(v, 1, shape);
            fl_ir_var_set_shape(sv, 1, shape);
            v->persistable = sv->persistable = true;
            FlOpDesc *fill = fl_ir_op_append(s0, "fill_constant");
            fl_ir_op_add_output(fill, "Out", var);
            fl_ir_op_set_ints(fill, "shape", shape, 1);
            /* a tiny learning rate keeps the values where they start; the rest positive, as
             * the square roots of the moments want them */
            fl_ir_op_set_float(fill, "value", !strcmp(slot, "LearningRate") ? 1e-6 : strstr(slot, "Pow") ? 0.9 : 0.5);
        }
    }
    return time_program(bd, "LearningRate", secs, e);
}

/* ---- wake-ups: how long a waiting thread takes to run again on this machine, as loaded ---- */

#define WAKE_ROUNDS 60

static void pause_us(double us) {
    struct timespec ts = {0, (long)(us * 1e3)};
    nanosleep(&ts, NULL);
}

typedef struct Waker {
    int fd[2];               /* wakeup: the pipe the sleeper reads */
    _Atomic double stamp;    /* pollwait: when the flag was set */
    atomic_int flag, seen;
    double sum;              /* the sleeper's: the delays summed */
} Waker;

/* Blocked in read(): each stamp written is read this long after (the scheduling latency of a
 * woken thread: a switch thread blocked in ppoll). */
static void *sleeper_read(void *arg) {
    Waker *w = arg;
    double t0;
    while (read(w->fd[0], &t0, sizeof t0) == (ssize_t)sizeof t0) w->sum += now() - t0;
    return NULL;
}

/* Waits for each flag as an MPI rank waits (runtime/mpi/wire.c's flm_backoff: spin 100 times,
 * yield 3000, then sleep 50 us per look). */
static void *sleeper_poll(void *arg) {
    Waker *w = arg;
    for (int r = 0; r < WAKE_ROUNDS; r++) {
        for (int n = 0; !atomic_load(&w->flag); n++) {
            if (n >= 3100) pause_us(50);
            else if (n >= 100) sched_yield();
        }
        w->sum += now() - atomic_load(&w->stamp);
        atomic_store(&w->flag, 0);
        atomic_store(&w->seen, 1);
    }
    return NULL;
}

/* The mean delays (us) of WAKE_ROUNDS wake-ups of each kind, 1-9 ms apart (a rank's waits are
 * longer than its spin and yield phases): the mean, since a step adds them up. */
static FlStatus measure_wakeups(double *wakeup_us, double *pollwait_us, FlErr *e) {
    Waker w = {.sum = 0};
    pthread_t th;
    if (pipe(w.fd) != 0) return fl_err(e, "calibrate: pipe failed");
    unsigned seed = 1;
    if (pthread_create(&th, NULL, sleeper_read, &w) != 0) {
        close(w.fd[0]), close(w.fd[1]);
        return fl_err(e, "calibrate: cannot start a thread");
    }
    for (int r = 0; r < WAKE_ROUNDS; r++) {
        pause_us(1000 + 8000.0 * rand_r(&seed) / RAND_MAX);
        double t0 = now();
        if (write(w.fd[1], &t0, sizeof t0) != (ssize_t)sizeof t0) break;
    }
    close(w.fd[1]);
    pthread_join(th, NULL);
    close(w.fd[0]);
    *wakeup_us = w.sum / WAKE_ROUNDS * 1e6;
    w.sum = 0;
    if (pthread_create(&th, NULL, sleeper_poll, &w) != 0) return fl_err(e, "calibrate: cannot start a thread");
    for (int r = 0; r < WAKE_ROUNDS; r++) {
        pause_us(1000 + 8000.0 * rand_r(&seed) / RAND_MAX);
        atomic_store(&w.seen, 0);
        atomic_store(&w.stamp, now());
        atomic_store(&w.flag, 1);
        while (!atomic_load(&w.seen)) pause_us(50);
    }
    pthread_join(th, NULL);
    *pollwait_us = w.sum / WAKE_ROUNDS * 1e6;
    return FL_OK;
}

FlStatus fl_calibrate(FlBuf *out, FlErr *e) {
    if (!getenv("OPENBLAS_NUM_THREADS")) openblas_set_num_threads(1);
    static const int64_t shapes[][3] = {{64, 128, 64}, {64, 512, 784}, {128, 512, 512}, {256, 1024, 1024}};
    FlBuf body = {0};
    FlStatus st = FL_OK;
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0] && st == FL_OK; i++) {
        int64_t m = shapes[i][0], n = shapes[i][1], k = shapes[i][2];
        Bin b = {FL_TENSOR_INIT, FL_TENSOR_INIT, FL_TENSOR_INIT};
        double t = 0;
        st = filled(e, &b.x, 2, (int64_t[]){m, k});
        if (st == FL_OK) st = filled(e, &b.y, 2, (int64_t[]){k, n});
        if (st == FL_OK) st = timeit(do_mul, &b, &t, e);
        if (st == FL_OK)
            fl_buf_printf(&body, "gemm %lldx%lldx%lld %.2f GFLOP/s\n", (long long)m, (long long)n, (long long)k,
                          2.0 * (double)(m * n * k) / t / 1e9);
        bin_fini(&b);
    }
    /* the executor's fixed cost per op: the chain on one float; its per-byte cost: the chain on
     * [64, 4096] floats (1 MiB, a layer's activations), the fixed costs taken off */
    double us = 0, t1 = 0, tb = 0, b1 = 0, bb = 0;
    if (st == FL_OK) st = run_chain(1, 1, 200, &t1, &b1, e);
    us = t1 / 201 * 1e6;
    if (st == FL_OK) st = run_chain(64, 4096, 20, &tb, &bb, e);
    if (st == FL_OK)
        fl_buf_printf(&body, "elementwise %.3f GB/s\n", (bb - 20 * b1) / fmax(tb - 21 * us * 1e-6, 1e-9) / 1e9);
    const int64_t N = 1 << 20; /* 4 MiB per float tensor: past the caches, as a layer's are */
    if (st == FL_OK) {
        Bin b = {FL_TENSOR_INIT, FL_TENSOR_INIT, FL_TENSOR_INIT};
        double t = 0;
        int64_t one = 1;
        st = filled(e, &b.x, 1, &N);
        if (st == FL_OK) st = filled(e, &b.y, 1, &N);
        if (st == FL_OK) st = fl_tensor_alloc(e, &b.out, FL_DT_FLOAT32, 1, &one);
        if (st == FL_OK) {
            *(float *)fl_tensor_data(&b.out) = 1e-6f;
            st = timeit(do_sgd, &b, &t, e);
        }
        /* Param, Grad and ParamOut (the learning rate's 4 bytes apart) */
        if (st == FL_OK) fl_buf_printf(&body, "optimizer %.3f GB/s\n", 3.0 * 4 * (double)N / t / 1e9);
        bin_fini(&b);
    }
    /* each optimizer op through the executor, as a pserver runs it: Adam's square root and
     * division, not its bytes, set its pace (the sgd kernel's rate above is the default) */
    for (size_t i = 0; i < fl_ops_count() && st == FL_OK; i++) {
        const FlOpInfo *info = fl_ops_at(i);
        if (info->is_grad || !(info->flags & FL_OPF_OPTIMIZE)) continue;
        double t = 0, bytes = 0;
        st = run_optimizer(info, N, &t, &bytes, e);
        if (st == FL_OK) fl_buf_printf(&body, "optimizer %s %.3f GB/s\n", info->name, bytes / t / 1e9);
    }
    if (st == FL_OK) {
        Cpy c = {.n = (size_t)16 << 20};
        c.a = fl_xmalloc(c.n), c.b = fl_xmalloc(c.n);
        memset(c.a, 1, c.n);
        memset(c.b, 2, c.n);
        double t = 0;
        st = timeit(do_copy, &c, &t, e);
        if (st == FL_OK) fl_buf_printf(&body, "memcpy %.3f GB/s\n", (double)c.n / t / 1e9);
        free(c.a), free(c.b);
    }
    if (st == FL_OK) fl_buf_printf(&body, "op_overhead %.3f us\n", us);
    double wake = 0, poll = 0;
    if (st == FL_OK) st = measure_wakeups(&wake, &poll, e);
    if (st == FL_OK) fl_buf_printf(&body, "wakeup %.1f us\npollwait %.1f us\n", wake, poll);
    if (st == FL_OK) {
        char host[256] = "?";
        FILE *f = fopen("/proc/sys/kernel/hostname", "r");
        if (f) {
            if (fgets(host, sizeof host, f)) host[strcspn(host, "\n")] = 0;
            fclose(f);
        }
        const char *thr = getenv("OPENBLAS_NUM_THREADS");
        FlBuf gemm = {0};
        fl_gemm_describe(fl_gemm_info(), &gemm);
        fl_buf_printf(out, "# fluidc calibration (flc calibrate) of host %s, OpenBLAS threads: %s\n"
                      "# GEMM: %s\n", host, thr ? thr : "1", fl_buf_str(&gemm));
        fl_buf_free(&gemm);
        fl_buf_printf(out,
                      "# NAME VALUE UNIT per line (docs/simulate.md). gemm MxNxK: C[M,N] = A[M,K] B[K,N]\n"
                      "# through fl_kernel_mul; elementwise: bytes read and written per s by a program of relu,\n"
                      "# scale, elementwise_add and softmax ops on [64, 4096] floats run by the executor;\n"
                      "# optimizer: bytes of Param, Grad and ParamOut of the in-place sgd kernel per s; optimizer OP: bytes\n"
                      "# of every input and output of one OP on 1M floats run by the executor; memcpy: bytes\n"
                      "# copied per s; op_overhead: the executor's time per op of that program on one float;\n"
                      "# wakeup: a thread blocked in read() runs this long after the write; pollwait: a thread\n"
                      "# waiting as an MPI rank waits (spin, yield, 50 us sleeps) sees a flag this long after\n"
                      "# it is set (means of 60 rounds; used by a cluster spec's 'machine' line).\n"
                      "# MPI latency and bandwidth are the cluster spec's (flc simulate --cluster).\n");
        fl_buf_puts(out, fl_buf_str(&body));
    }
    fl_buf_free(&body);
    return st;
}
