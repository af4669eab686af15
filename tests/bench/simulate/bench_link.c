/* bench_link: the loopback MPI link as a job of N ranks sees it, for the cluster spec's
 * 'local' line (tests/bench/bench_simulate.sh): ranks 0 and 1 ping-pong while the others wait
 * in a barrier, so the figures carry the oversubscription and the load of a job of that many
 * ranks on this machine. The ranks wait for a message as the runtime does (runtime/mpi/wire.c,
 * flm_backoff: spin, then yield, then sleep 50 us), and rank 0 works GAP_US between rounds
 * while rank 1 idles (a trainer's compute, a pserver waiting), so the latency holds the time a
 * sleeping rank takes to wake. Prints "latency_us X" (median one-way time of a 64-byte message)
 * and "bandwidth_GBps Y" (median of 1 MiB messages, their latency taken off).
 * usage: mpirun -np N bench_link [ROUNDS [GAP_US]]
 */
#define _GNU_SOURCE
#include <sched.h>
#include <time.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The runtime's wait (flm_backoff's policy). */
static void wait_for(MPI_Request *r) {
    int done = 0;
    for (long n = 0;; n++) {
        MPI_Test(r, &done, MPI_STATUS_IGNORE);
        if (done) return;
        if (n < 100) continue;
        if (n < 3000) {
            sched_yield();
        } else {
            struct timespec ts = {0, 50000};
            nanosleep(&ts, NULL);
        }
    }
}

static void work(double us) {
    double t0 = MPI_Wtime();
    while ((MPI_Wtime() - t0) * 1e6 < us) {
    }
}

/* Median one-way seconds of `rounds` ping-pongs of n bytes between ranks 0 and 1. */
static double one_way(int rank, char *buf, int n, int rounds, double gap_us) {
    double *t = calloc((size_t)rounds, sizeof *t);
    MPI_Request rq;
    for (int r = 0; r < rounds; r++) {
        if (rank == 0) work(gap_us);
        double t0 = MPI_Wtime();
        if (rank == 0) {
            MPI_Send(buf, n, MPI_BYTE, 1, 0, MPI_COMM_WORLD);
            MPI_Irecv(buf, n, MPI_BYTE, 1, 0, MPI_COMM_WORLD, &rq);
        } else {
            MPI_Irecv(buf, n, MPI_BYTE, 0, 0, MPI_COMM_WORLD, &rq);
        }
        wait_for(&rq);
        if (rank == 1) MPI_Send(buf, n, MPI_BYTE, 0, 0, MPI_COMM_WORLD);
        t[r] = (MPI_Wtime() - t0) / 2;
    }
    qsort(t, (size_t)rounds, sizeof *t, cmp);
    double m = t[rounds / 2];
    free(t);
    return m;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int rounds = argc > 1 ? atoi(argv[1]) : 200;
    double gap = argc > 2 ? atof(argv[2]) : 1000;
    if (size < 2 || rounds < 1) {
        if (rank == 0) fprintf(stderr, "bench_link: needs 2 or more ranks and ROUNDS >= 1\n");
        MPI_Finalize();
        return 2;
    }
    int big = 1 << 20;
    char *buf = malloc((size_t)big);
    memset(buf, 1, (size_t)big);
    if (rank < 2) {
        one_way(rank, buf, 64, 10, 0);
        double lat = one_way(rank, buf, 64, rounds, gap);
        double t = one_way(rank, buf, big, rounds / 4 + 1, 0);
        if (rank == 0) {
            double bw = t > lat ? big / (t - lat) : big / t;
            printf("latency_us %.3f\nbandwidth_GBps %.4f\n", lat * 1e6, bw / 1e9);
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    free(buf);
    MPI_Finalize();
    return 0;
}
