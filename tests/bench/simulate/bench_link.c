/* bench_link: the loopback MPI link as a job of N ranks sees it, for the cluster spec's
 * 'local' line (tests/bench/bench_simulate.sh): ranks 0 and 1 ping-pong while the others wait
 * in a barrier (polling, as a job's idle ranks do), so the figures carry the oversubscription
 * of a job of that many ranks on this machine. Prints "latency_us X" (median one-way time of a
 * 64-byte message) and "bandwidth_GBps Y" (median of 1 MiB messages, their latency taken off).
 * usage: mpirun -np N bench_link [ROUNDS]
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Median one-way seconds of `rounds` ping-pongs of n bytes between ranks 0 and 1. */
static double one_way(int rank, char *buf, int n, int rounds) {
    double *t = calloc((size_t)rounds, sizeof *t);
    for (int r = 0; r < rounds; r++) {
        double t0 = MPI_Wtime();
        if (rank == 0) {
            MPI_Send(buf, n, MPI_BYTE, 1, 0, MPI_COMM_WORLD);
            MPI_Recv(buf, n, MPI_BYTE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(buf, n, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(buf, n, MPI_BYTE, 0, 0, MPI_COMM_WORLD);
        }
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
    if (size < 2 || rounds < 1) {
        if (rank == 0) fprintf(stderr, "bench_link: needs 2 or more ranks and ROUNDS >= 1\n");
        MPI_Finalize();
        return 2;
    }
    int big = 1 << 20;
    char *buf = malloc((size_t)big);
    memset(buf, 1, (size_t)big);
    if (rank < 2) {
        one_way(rank, buf, 64, 10);
        double lat = one_way(rank, buf, 64, rounds);
        double t = one_way(rank, buf, big, rounds / 4 + 1);
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
