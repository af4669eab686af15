/* bench_mpi: the MPI benchmark's job (tests/bench/bench_mpi.sh runs it; it prints figures and
 * never fails on time). Two ranks: rank 0 the trainer, rank 1 the pserver.
 *
 *   mpirun -np 2 bench_mpi BIG.plan MLP.flp MLP.plan [ROUNDS]
 *
 * 1. raw: MPI_Send/MPI_Recv ping-pong of a 16 MiB buffer (rank 0 -> 1 -> 0), best round of
 *    those before and after the path;
 * 2. path: the same bytes through the parameter-server path of BIG.plan (P=1 T=1, a 2048x2048
 *    float32 parameter): the trainer's FlDist send of the 16 MiB gradient, send_barrier, recv
 *    of the 16 MiB parameter, with the pserver averaging, running SGD and answering piece by
 *    piece; the server's optimizer time per step is reported too; also
 *    the bytes both ranks put on the wire per step vs the minimum 2 x parameter bytes;
 * 3. step: a training step of MLP.flp (784-512-512-10, batch 128, synthetic data) run locally on
 *    rank 0 vs the same step as trainer 0 of MLP.plan (P=1 T=1) with rank 1 serving.
 * Prints "key value" lines for the script.
 */
#define _GNU_SOURCE
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "compiler/ir/ir.h"
#include "runtime/api.h"
#include "runtime/core/dist.h"
#include "runtime/mpi/mpi.h"
#include "runtime/rng.h"

#define MIB16 (16u << 20)

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void die(FlMpi *m, const FlErr *e) { fl_mpi_fail(m, e->msg); }

/* Runs the pserver role of `plan` (rank 1) until the trainer is done. */
static void serve(FlMpi *m, FlPlan *plan) {
    FlErr e = {{0}};
    int64_t k = plan->rank_role.data[1];
    FlLoadedProgram *p = fl_program_from_bundle_take(plan->roles.data[k]);
    plan->roles.data[k] = NULL;
    FlExecutor *ex;
    if (fl_executor_new(p, NULL, &ex, &e)) die(m, &e);
    FlScope *s = fl_scope_new(NULL);
    fl_dist_attach(s, fl_mpi_dist(m));
    if (fl_executor_run_startup(ex, s, &e) || fl_executor_run(ex, s, NULL, 0, NULL, 0, &e)) die(m, &e);
    fl_scope_free(s);
    fl_executor_free(ex);
    fl_program_free(p);
}

/* rounds + 2 ping-pongs of 16 MiB between ranks 0 and 1; the best after 2 warm-up rounds. */
static void ping_pong(int rank, char *buf, int rounds, double *best) {
    for (int i = 0; i < rounds + 2; i++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = now();
        if (rank == 0) {
            MPI_Send(buf, (int)MIB16, MPI_BYTE, 1, 99, MPI_COMM_WORLD);
            MPI_Recv(buf, (int)MIB16, MPI_BYTE, 1, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(buf, (int)MIB16, MPI_BYTE, 0, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(buf, (int)MIB16, MPI_BYTE, 0, 99, MPI_COMM_WORLD);
        }
        double t = now() - t0;
        if (i >= 2 && t < *best) *best = t;
    }
}

static FlPlan *read_plan(FlMpi *m, const char *path) {
    FlErr e = {{0}};
    FlBundle *b = NULL;
    FlPlan *p = NULL;
    if (fl_ir_read(path, &b, &p, &e)) die(m, &e);
    if (!p) fl_mpi_fail(m, "expected a plan");
    return p;
}

static void random_tensor(FlMpi *m, FlTensor *t, FlDType dt, int64_t rows, int64_t cols, int64_t classes, uint64_t seed) {
    FlErr e = {{0}};
    int64_t ne[2] = {rows, cols};
    if (fl_tensor_alloc(&e, t, dt, 2, ne)) die(m, &e);
    FlRng r;
    fl_rng_init(&r, seed);
    for (int64_t i = 0; i < rows * cols; i++)
        fl_tensor_set(t, i, classes ? (double)(int64_t)(fl_rng_uniform(&r) * (double)classes) : fl_rng_uniform(&r));
}

/* Times `steps` training steps of ex on s (after 3 warm-up steps); best of 3 rounds, per step. */
static double time_steps(FlMpi *m, FlExecutor *ex, FlScope *s, const FlFeed *feeds, int steps, bool dist, int64_t *step) {
    FlErr e = {{0}};
    double best = 1e30;
    for (int round = 0; round < 4; round++) {
        int n = round == 0 ? 3 : steps;
        double t0 = now();
        for (int i = 0; i < n; i++) {
            if (dist) fl_mpi_step_begin(m, (*step)++, 128, 128);
            if (fl_executor_run(ex, s, feeds, 2, NULL, 0, &e)) die(m, &e);
            if (dist && fl_mpi_step_end(m, &e)) die(m, &e);
        }
        double t = (now() - t0) / n;
        if (round > 0 && t < best) best = t;
    }
    return best;
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: mpirun -np 2 bench_mpi BIG.plan MLP.flp MLP.plan [ROUNDS]\n");
        return 2;
    }
    int rounds = argc > 4 ? atoi(argv[4]) : 20;
    FlErr e = {{0}};
    FlMpi *m;
    FlMpiOptions mo = {.timeout = 120, .stats = false};
    if (fl_mpi_init(&mo, &m, &e)) {
        fprintf(stderr, "bench_mpi: %s\n", e.msg);
        return 1;
    }
    FlPlan *big = read_plan(m, argv[1]), *mlp = read_plan(m, argv[3]);
    if (fl_mpi_assign_plan(m, big, &e)) die(m, &e);
    int rank = fl_mpi_rank(m);
    FlDist *d = fl_mpi_dist(m);

    /* 1. raw ping-pong, before and after the path (the machine's load varies: best of both) */
    char *buf = calloc(1, MIB16);
    double raw = 1e30;
    ping_pong(rank, buf, rounds, &raw);

    /* 2. the pserver path */
    FlMpiStats s0, s1;
    if (rank == 1) {
        fl_mpi_get_stats(m, &s0);
        serve(m, big);
        fl_mpi_get_stats(m, &s1);
        double fig[3] = {s1.compute - s0.compute, (double)(s1.bytes - s0.bytes), (double)(s1.steps)};
        MPI_Send(fig, 3, MPI_DOUBLE, 0, 98, MPI_COMM_WORLD);
        ping_pong(rank, buf, rounds, &raw);
        serve(m, mlp);
    } else {
        FlTensor g = FL_TENSOR_INIT, w = FL_TENSOR_INIT;
        random_tensor(m, &g, FL_DT_FLOAT32, 2048, 2048, 0, 1);
        double best = 1e30;
        fl_mpi_get_stats(m, &s0);
        for (int i = 0; i < rounds + 2; i++) {
            fl_mpi_step_begin(m, i, 1, 1);
            double t0 = now();
            if (d->send(d, 0, "fc_0.w_0@GRAD", &g, &e) || d->barrier(d, FL_DIST_SEND_BARRIER, &e) ||
                d->recv(d, 0, "fc_0.w_0", &w, &e) || fl_mpi_step_end(m, &e))
                die(m, &e);
            double t = now() - t0;
            if (i >= 2 && t < best) best = t;
        }
        fl_mpi_get_stats(m, &s1);
        if (fl_mpi_finish(m, &e)) die(m, &e);
        double fig[3];
        MPI_Recv(fig, 3, MPI_DOUBLE, 1, 98, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        ping_pong(rank, buf, rounds, &raw);
        int steps = rounds + 2;
        double opt = fig[0] / steps; /* the server's SGD per step */
        double wire = ((double)(s1.bytes - s0.bytes) + fig[1]) / steps;
        printf("raw_ms %.3f\n", raw * 1e3);
        printf("path_ms %.3f\n", best * 1e3);
        printf("server_opt_ms %.3f\n", opt * 1e3);
        printf("wire_bytes %.0f\n", wire);
        printf("min_bytes %.0f\n", 2.0 * MIB16);
        fl_tensor_fini(&g);
        fl_tensor_fini(&w);

        /* 3. step time: local vs trainer of P=1 T=1 */
        FlLoadedProgram *lp;
        FlExecutor *lex, *tex;
        if (fl_program_load(argv[2], &lp, &e) || fl_executor_new(lp, NULL, &lex, &e)) die(m, &e);
        int64_t k = mlp->rank_role.data[0];
        FlLoadedProgram *tp = fl_program_from_bundle_take(mlp->roles.data[k]);
        mlp->roles.data[k] = NULL;
        if (fl_executor_new(tp, NULL, &tex, &e)) die(m, &e);
        FlScope *ls = fl_scope_new(NULL), *ts = fl_scope_new(NULL);
        fl_dist_attach(ts, d);
        if (fl_executor_run_startup(lex, ls, &e) || fl_executor_run_startup(tex, ts, &e)) die(m, &e);
        FlTensor x = FL_TENSOR_INIT, y = FL_TENSOR_INIT;
        random_tensor(m, &x, FL_DT_FLOAT32, 128, 784, 0, 2);
        random_tensor(m, &y, FL_DT_INT64, 128, 1, 10, 3);
        FlFeed feeds[2] = {{"x", &x}, {"label", &y}};
        int64_t step = 0;
        double tl = 1e30, td = 1e30;
        for (int trial = 0; trial < 2; trial++) { /* alternate, keep each side's best */
            double a = time_steps(m, lex, ls, feeds, 10, false, &step);
            double b = time_steps(m, tex, ts, feeds, 10, true, &step);
            if (a < tl) tl = a;
            if (b < td) td = b;
        }
        if (fl_mpi_finish(m, &e)) die(m, &e);
        printf("local_step_ms %.3f\n", tl * 1e3);
        printf("dist_step_ms %.3f\n", td * 1e3);
        fflush(stdout);
        fl_tensor_fini(&x);
        fl_tensor_fini(&y);
        fl_scope_free(ls);
        fl_scope_free(ts);
        fl_executor_free(lex);
        fl_executor_free(tex);
        fl_program_free(lp);
        fl_program_free(tp);
    }
    free(buf);
    fl_ir_plan_free(big);
    fl_ir_plan_free(mlp);
    fl_mpi_free(m);
    return 0;
}
