/* flnetprobe: measures a test cluster's links (tests/cluster/cluster_test.sh's shaping case).
 *
 *   flnetprobe serve PORT SECONDS      UDP echo and TCP sink on PORT, for SECONDS at most
 *   flnetprobe rtt ADDR PORT COUNT [MS] COUNT UDP echoes (each waits MS ms at most, default
 *                                      1000): the round trip's minimum and median in ms, and
 *                                      how many came back
 *   flnetprobe send ADDR PORT BYTES    BYTES over TCP, to the sink: seconds and Mbit/s of TCP
 *                                      payload (from the connect to the sink's receipt)
 *   flnetprobe reach ADDR PORT SECONDS a TCP connect: "reachable" (exit 0) when the host answers
 *                                      (accepted or refused), "unreachable" (exit 1) when it does
 *                                      not within SECONDS
 * Exit status 2 on bad arguments or a failing system call.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static void fail(const char *what) {
    fprintf(stderr, "flnetprobe: %s: %s\n", what, strerror(errno));
    exit(2);
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static long number(const char *s, const char *what, long lo, long hi) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || *end || end == s || v < lo || v > hi) {
        fprintf(stderr, "flnetprobe: bad %s '%s' (%ld..%ld)\n", what, s, lo, hi);
        exit(2);
    }
    return v;
}

static struct sockaddr_in address(const char *addr, const char *port) {
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)number(port, "port", 1, 65535));
    if (addr && inet_pton(AF_INET, addr, &a.sin_addr) != 1) {
        fprintf(stderr, "flnetprobe: bad IPv4 address '%s'\n", addr);
        exit(2);
    }
    return a;
}

static int serve(const char *port, long seconds) {
    struct sockaddr_in a = address(NULL, port);
    int u = socket(AF_INET, SOCK_DGRAM, 0), l = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    if (u < 0 || l < 0) fail("socket");
    setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(u, (struct sockaddr *)&a, sizeof a) || bind(l, (struct sockaddr *)&a, sizeof a)) fail("bind");
    if (listen(l, 4)) fail("listen");
    double end = now() + (double)seconds;
    static char buf[1 << 16];
    while (now() < end) {
        struct pollfd p[2] = {{u, POLLIN, 0}, {l, POLLIN, 0}};
        if (poll(p, 2, 100) < 0 && errno != EINTR) fail("poll");
        if (p[0].revents & POLLIN) {
            struct sockaddr_in from;
            socklen_t fl = sizeof from;
            ssize_t r = recvfrom(u, buf, sizeof buf, 0, (struct sockaddr *)&from, &fl);
            if (r > 0) sendto(u, buf, (size_t)r, 0, (struct sockaddr *)&from, fl);
        }
        if (p[1].revents & POLLIN) { /* a sink: reads to the end, answers with the byte count */
            int c = accept(l, NULL, NULL);
            if (c < 0) continue;
            uint64_t total = 0;
            ssize_t r;
            while ((r = read(c, buf, sizeof buf)) > 0) total += (uint64_t)r;
            if (write(c, &total, sizeof total) != sizeof total) perror("flnetprobe: sink answer");
            close(c);
        }
    }
    return 0;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int rtt(const char *addr, const char *port, long count, double wait) {
    struct sockaddr_in a = address(addr, port);
    int u = socket(AF_INET, SOCK_DGRAM, 0);
    if (u < 0 || connect(u, (struct sockaddr *)&a, sizeof a)) fail("udp connect");
    double *t = calloc((size_t)count, sizeof *t);
    long got = 0;
    for (long i = 0; i < count; i++) {
        uint64_t id = (uint64_t)i, back = 0;
        double t0 = now();
        if (send(u, &id, sizeof id, 0) < 0 && errno != ECONNREFUSED) fail("send");
        for (;;) { /* skips a late answer to an earlier echo */
            double left = wait - (now() - t0);
            struct pollfd p = {u, POLLIN, 0};
            if (left <= 0 || poll(&p, 1, (int)(left * 1000) + 1) <= 0) break;
            if (recv(u, &back, sizeof back, 0) == sizeof back && back == id) {
                t[got++] = (now() - t0) * 1e3;
                break;
            }
        }
    }
    if (!got) {
        printf("rtt: no answer from %s of %ld echoes\n", addr, count);
        return 1;
    }
    qsort(t, (size_t)got, sizeof *t, cmp);
    printf("rtt min %.3f ms median %.3f ms (%ld of %ld echoes answered)\n", t[0], t[got / 2], got, count);
    free(t);
    return 0;
}

static int send_bytes(const char *addr, const char *port, long bytes) {
    struct sockaddr_in a = address(addr, port);
    int s = socket(AF_INET, SOCK_STREAM, 0);
    static char buf[1 << 16];
    double t0 = now();
    if (s < 0 || connect(s, (struct sockaddr *)&a, sizeof a)) fail("tcp connect");
    for (long left = bytes; left > 0;) {
        ssize_t w = write(s, buf, left < (long)sizeof buf ? (size_t)left : sizeof buf);
        if (w < 0) fail("write");
        left -= w;
    }
    shutdown(s, SHUT_WR);
    uint64_t total = 0;
    if (read(s, &total, sizeof total) != sizeof total) fail("the sink's answer");
    double secs = now() - t0;
    if (total != (uint64_t)bytes) {
        fprintf(stderr, "flnetprobe: the sink got %llu bytes of %ld\n", (unsigned long long)total, bytes);
        return 2;
    }
    printf("sent %ld bytes in %.3f s: %.1f Mbit/s\n", bytes, secs, (double)bytes * 8 / secs / 1e6);
    return 0;
}

static int reach(const char *addr, const char *port, long seconds) {
    struct sockaddr_in a = address(addr, port);
    int s = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    if (s < 0) fail("socket");
    int r = connect(s, (struct sockaddr *)&a, sizeof a), err = r ? errno : 0;
    if (r && err == EINPROGRESS) {
        struct pollfd p = {s, POLLOUT, 0};
        if (poll(&p, 1, (int)seconds * 1000) <= 0) {
            printf("unreachable: no answer from %s within %ld s\n", addr, seconds);
            return 1;
        }
        socklen_t l = sizeof err;
        getsockopt(s, SOL_SOCKET, SO_ERROR, &err, &l);
    }
    if (err && err != ECONNREFUSED) {
        printf("unreachable: %s: %s\n", addr, strerror(err));
        return 1;
    }
    printf("reachable: %s %s\n", addr, err ? "refused the connection" : "accepted the connection");
    return 0;
}

int main(int argc, char **argv) {
    if (argc == 4 && !strcmp(argv[1], "serve")) return serve(argv[2], number(argv[3], "seconds", 1, 3600));
    if ((argc == 5 || argc == 6) && !strcmp(argv[1], "rtt"))
        return rtt(argv[2], argv[3], number(argv[4], "count", 1, 100000),
                   argc == 6 ? (double)number(argv[5], "wait in ms", 1, 60000) / 1e3 : 1.0);
    if (argc == 5 && !strcmp(argv[1], "send")) return send_bytes(argv[2], argv[3], number(argv[4], "bytes", 1, 1L << 40));
    if (argc == 5 && !strcmp(argv[1], "reach")) return reach(argv[2], argv[3], number(argv[4], "seconds", 1, 600));
    fprintf(stderr, "usage: flnetprobe serve PORT SECONDS | rtt ADDR PORT COUNT [MS] | send ADDR PORT BYTES | "
                    "reach ADDR PORT SECONDS\n");
    return 2;
}
