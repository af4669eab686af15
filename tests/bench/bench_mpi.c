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
 *
 *   mpirun -np 2 bench_mpi --transfer BIG.plan [ROUNDS]
 *
 * 1 and 2 only (tests/bench/bench_transport_hosts.sh, the ranks on two hosts of a test cluster).
 * With FL_BENCH_LINK=IFACE rank 0 also prints link_bytes: the bytes its interface IFACE received
 * and sent per step of the path (Ethernet frames, from /proc/net/dev of its network namespace).
 *
 *   mpirun -np 2 bench_mpi --allreduce MLP.flp AR.plan
 *
 * 4. scaling: both ranks train MLP.flp locally with batch 128 (at once, each on its core), then
 *    as the two trainers of the allreduce plan AR.plan with 64 rows each (the same global batch
 *    of 128): samples/s of the pair vs one local process.
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

/* The bytes interface `link` received plus sent so far (/proc/net/dev); -1 when it is not there. */
static double link_bytes(const char *link) {
    FILE *f = fopen("/proc/net/dev", "r");
    char line[512];
    double got = -1;
    size_t n = strlen(link);
    while (f && fgets(line, sizeof line, f)) {
        const char *p = line;
        while (*p == ' ') p++;
        if (strncmp(p, link, n) || p[n] != ':') continue;
        unsigned long long v[9];
        if (sscanf(p + n + 1, "%llu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5],
                   &v[6], &v[7], &v[8]) == 9)
            got = (double)v[0] + (double)v[8]; /* receive bytes, transmit bytes */
    }
    if (f) fclose(f);
    return got;
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

/* Times `steps` training steps of ex on s (after 3 warm-up steps); best of 3 rounds, per step.
 * dist: each step is a step of the job, `rows` of its `global` rows on this trainer. */
static double time_steps(FlMpi *m, FlExecutor *ex, FlScope *s, const FlFeed *feeds, int steps, bool dist, int64_t *step,
                         size_t rows, size_t global) {
    FlErr e = {{0}};
    double best = 1e30;
    for (int round = 0; round < 4; round++) {
        int n = round == 0 ? 3 : steps;
        double t0 = now();
        for (int i = 0; i < n; i++) {
            if (dist) fl_mpi_step_begin(m, (*step)++, rows, global);
            if (fl_executor_run(ex, s, feeds, 2, NULL, 0, &e)) die(m, &e);
            if (dist && fl_mpi_step_end(m, &e)) die(m, &e);
        }
        double t = (now() - t0) / n;
        if (round > 0 && t < best) best = t;
    }
    return best;
}

/* MPI with the benchmark's options; NULL (after a message) when it cannot start. */
static FlMpi *start(void) {
    FlErr e = {{0}};
    FlMpi *m;
    FlMpiOptions mo = {.timeout = 120, .stats = false};
    if (fl_mpi_init(&mo, &m, &e) == FL_OK) return m;
    fprintf(stderr, "bench_mpi: %s\n", e.msg);
    return NULL;
}

/* The local program and this rank's role of a plan, each with its executor and a scope that
 * ran its startup program (the role's scope with the transport attached). */
typedef struct Pair {
    FlLoadedProgram *lp, *tp;
    FlExecutor *lex, *tex;
    FlScope *ls, *ts;
} Pair;

static void pair_open(FlMpi *m, const char *local, FlPlan *plan, Pair *p) {
    FlErr e = {{0}};
    int64_t k = plan->rank_role.data[fl_mpi_rank(m)];
    p->tp = fl_program_from_bundle_take(plan->roles.data[k]);
    plan->roles.data[k] = NULL;
    if (fl_program_load(local, &p->lp, &e) || fl_executor_new(p->lp, NULL, &p->lex, &e) ||
        fl_executor_new(p->tp, NULL, &p->tex, &e))
        die(m, &e);
    p->ls = fl_scope_new(NULL);
    p->ts = fl_scope_new(NULL);
    fl_dist_attach(p->ts, fl_mpi_dist(m));
    if (fl_executor_run_startup(p->lex, p->ls, &e) || fl_executor_run_startup(p->tex, p->ts, &e)) die(m, &e);
}

static void pair_close(Pair *p) {
    fl_scope_free(p->ls);
    fl_scope_free(p->ts);
    fl_executor_free(p->lex);
    fl_executor_free(p->tex);
    fl_program_free(p->lp);
    fl_program_free(p->tp);
}

/* 4: local batch 128 on every rank at once, then the allreduce pair with 64 rows each. */
static int scaling(const char *mlp_path, const char *plan_path) {
    FlErr e = {{0}};
    FlMpi *m = start();
    if (!m) return 1;
    FlPlan *plan = read_plan(m, plan_path);
    if (fl_mpi_assign_plan(m, plan, 0, "bench", &e)) die(m, &e);
    int rank = fl_mpi_rank(m);
    Pair p;
    pair_open(m, mlp_path, plan, &p);
    FlTensor x = FL_TENSOR_INIT, y = FL_TENSOR_INIT, xh = FL_TENSOR_INIT, yh = FL_TENSOR_INIT;
    random_tensor(m, &x, FL_DT_FLOAT32, 128, 784, 0, 2);
    random_tensor(m, &y, FL_DT_INT64, 128, 1, 10, 3);
    random_tensor(m, &xh, FL_DT_FLOAT32, 64, 784, 0, 4 + (uint64_t)rank);
    random_tensor(m, &yh, FL_DT_INT64, 64, 1, 10, 6 + (uint64_t)rank);
    FlFeed full[2] = {{"x", &x}, {"label", &y}}, half[2] = {{"x", &xh}, {"label", &yh}};
    int64_t step = 0;
    double tl = 1e30, td = 1e30;
    for (int trial = 0; trial < 4; trial++) { /* alternate, keep each side's best */
        MPI_Barrier(MPI_COMM_WORLD);
        double a = time_steps(m, p.lex, p.ls, full, 10, false, &step, 128, 128);
        MPI_Barrier(MPI_COMM_WORLD);
        double b = time_steps(m, p.tex, p.ts, half, 10, true, &step, 64, 128);
        if (a < tl) tl = a;
        if (b < td) td = b;
    }
    if (fl_mpi_finish(m, &e)) die(m, &e);
    double all[2] = {tl, td}, got[4];
    MPI_Gather(all, 2, MPI_DOUBLE, got, 2, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    if (rank == 0) { /* the slower rank sets the pace */
        printf("ar_local_ms %.3f\n", (got[0] > got[2] ? got[0] : got[2]) * 1e3);
        printf("ar_step_ms %.3f\n", (got[1] > got[3] ? got[1] : got[3]) * 1e3);
        fflush(stdout);
    }
    fl_tensor_fini(&x);
    fl_tensor_fini(&y);
    fl_tensor_fini(&xh);
    fl_tensor_fini(&yh);
    pair_close(&p);
    fl_ir_plan_free(plan);
    fl_mpi_free(m);
    return 0;
}

int main(int argc, char **argv) {
    if (argc == 4 && !strcmp(argv[1], "--allreduce")) return scaling(argv[2], argv[3]);
    bool transfer = argc >= 3 && argc <= 4 && !strcmp(argv[1], "--transfer");
    if (!transfer && (argc < 4 || argc > 5)) {
        fprintf(stderr, "usage: mpirun -np 2 bench_mpi BIG.plan MLP.flp MLP.plan [ROUNDS]\n"
                        "       mpirun -np 2 bench_mpi --transfer BIG.plan [ROUNDS]\n"
                        "       mpirun -np 2 bench_mpi --allreduce MLP.flp AR.plan\n");
        return 2;
    }
    if (transfer) argv++, argc--; /* BIG.plan [ROUNDS] */
    const char *rounds_arg = transfer ? (argc > 2 ? argv[2] : NULL) : (argc > 4 ? argv[4] : NULL);
    int rounds = rounds_arg ? atoi(rounds_arg) : 20;
    if (rounds < 1 || rounds > 100000) {
        fprintf(stderr, "bench_mpi: bad ROUNDS '%s' (1..100000)\n", rounds_arg);
        return 2;
    }
    const char *link = getenv("FL_BENCH_LINK");
    FlErr e = {{0}};
    FlMpi *m = start();
    if (!m) return 1;
    FlPlan *big = read_plan(m, argv[1]), *mlp = transfer ? NULL : read_plan(m, argv[3]);
    if (fl_mpi_assign_plan(m, big, 0, "bench", &e)) die(m, &e);
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
        if (mlp) serve(m, mlp);
    } else {
        FlTensor g = FL_TENSOR_INIT, w = FL_TENSOR_INIT;
        random_tensor(m, &g, FL_DT_FLOAT32, 2048, 2048, 0, 1);
        double best = 1e30, l0 = link ? link_bytes(link) : -1;
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
        double l1 = link ? link_bytes(link) : -1;
        if (link && (l0 < 0 || l1 < 0)) fl_mpi_fail(m, "FL_BENCH_LINK names no interface of /proc/net/dev");
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
        if (link) printf("link_bytes %.0f\n", (l1 - l0) / steps);
        fflush(stdout);
        fl_tensor_fini(&g);
        fl_tensor_fini(&w);
    }
    if (rank == 0 && mlp) {

        /* 3. step time: local vs trainer of P=1 T=1 */
        Pair p;
        pair_open(m, argv[2], mlp, &p);
        FlTensor x = FL_TENSOR_INIT, y = FL_TENSOR_INIT;
        random_tensor(m, &x, FL_DT_FLOAT32, 128, 784, 0, 2);
        random_tensor(m, &y, FL_DT_INT64, 128, 1, 10, 3);
        FlFeed feeds[2] = {{"x", &x}, {"label", &y}};
        int64_t step = 0;
        double tl = 1e30, td = 1e30;
        for (int trial = 0; trial < 4; trial++) { /* alternate, keep each side's best */
            double a = time_steps(m, p.lex, p.ls, feeds, 10, false, &step, 128, 128);
            double b = time_steps(m, p.tex, p.ts, feeds, 10, true, &step, 128, 128);
            if (a < tl) tl = a;
            if (b < td) td = b;
        }
        if (fl_mpi_finish(m, &e)) die(m, &e);
        printf("local_step_ms %.3f\n", tl * 1e3);
        printf("dist_step_ms %.3f\n", td * 1e3);
        fflush(stdout);
        fl_tensor_fini(&x);
        fl_tensor_fini(&y);
        pair_close(&p);
    }
    free(buf);
    fl_ir_plan_free(big);
    if (mlp) fl_ir_plan_free(mlp);
    fl_mpi_free(m);
    return 0;
}
