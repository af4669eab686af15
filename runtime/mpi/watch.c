/* watch.c: the watch of a job that spans several hosts: a rank whose process dies (killed, or
 * its host powered off or rebooted) is named, with its role and host, by a rank that sees its
 * connection close, before mpirun ends the job for its lost daemon in words of its own.
 *
 * How: after the roles, rank 0 (the hub) listens on a TCP port of every interface and tells
 * the others the port and its IPv4 addresses (an Ibcast, polled with the peer timeout); every
 * other rank connects to it (the loopback first when it shares rank 0's host, then the
 * addresses in order, 2 s each) and says its rank. A thread per rank then waits on the
 * connections (rank 0 on all of them, the others on theirs to rank 0). The operating system
 * closes a dead process's sockets, so a connection that ends without a goodbye byte ('B',
 * sent by fl_mpi_free once every rank has finished) is a lost rank: the thread ends the job
 * (fl_mpi_fail) naming it. A rank that fails sends 'A' first (fl_mpi_fail), which the hub
 * passes on, so the ranks that the abort takes down are not reported as lost too. mpirun, which
 * sees the lost host's daemon go at the same moment, ends the other ranks with SIGTERM: the
 * rank's handler waits TERM_WAIT_HUB_MS (rank 0) or TERM_WAIT_MS before it lets the signal end
 * the rank, so rank 0 names the lost rank first, and the others, terminating, name nobody.
 *
 * Invariants: the watch never stops a job that ends well, nor one that could not make its
 * connections (a rank that cannot reach rank 0 is only not watched); it sends only the bytes
 * above, with MSG_NOSIGNAL (a closed peer never raises SIGPIPE); a machine's cut link closes
 * nothing, so that case stays the peer timeout's (flm_waited_too_long).
 */
#define _GNU_SOURCE
#include "runtime/mpi/mpi_impl.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define WATCH_ADDRS 8
#define CONNECT_WAIT_MS 2000
/* SIGTERM (mpirun ending the job for a lost daemon) waits this long before it ends the rank, so
 * that rank 0 can still name the lost rank; the others wait longer (rank 0 going first is then
 * no loss of theirs: they are terminating, and say nothing) */
#define TERM_WAIT_HUB_MS 200
#define TERM_WAIT_MS 400

static volatile sig_atomic_t terminating;
static long term_wait_ms;

static void on_term(int sig) {
    terminating = 1;
    struct timespec ts = {term_wait_ms / 1000, (term_wait_ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
    signal(sig, SIG_DFL);
    raise(sig); /* delivered once the handler returns: the rank ends as SIGTERM ends it */
}

/* The watch threads never take SIGTERM: its handler sleeps while they report. */
static void block_term(void) {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
}

typedef struct WatchAddr { /* what rank 0 tells the others */
    uint32_t addr[WATCH_ADDRS]; /* IPv4, network order */
    uint16_t port;              /* network order; 0: no watch */
    uint16_t n;
} WatchAddr;

typedef struct Peer {
    int fd, rank; /* rank -1 until its hello (4 bytes) is in */
    unsigned char hello[4];
    int got;
    bool bye, closed;
} Peer;

struct FlmWatch {
    FlMpi *m;
    WatchAddr wa;
    int lfd;     /* the hub's listening socket, else -1 */
    int wake[2]; /* a pipe: flm_watch_stop wakes the thread */
    pthread_t thread;
    bool on;
    pthread_mutex_t mu; /* peers (their fds are written by flm_watch_say from other threads) */
    FL_VEC(Peer) peers;
    bool aborting; /* an 'A' came: the job is ending anyway */
};

static void say_all(FlmWatch *w, char c) {
    pthread_mutex_lock(&w->mu);
    for (size_t i = 0; i < w->peers.len; i++)
        if (!w->peers.data[i].closed && w->peers.data[i].fd >= 0)
            (void)!send(w->peers.data[i].fd, &c, 1, MSG_NOSIGNAL | MSG_DONTWAIT);
    pthread_mutex_unlock(&w->mu);
}

static void lost(FlmWatch *w, int rank) {
    char pn[FLM_PEER_NAME_MAX], msg[FLM_PEER_NAME_MAX + 160];
    snprintf(msg, sizeof msg,
             "error: %s " FL_MPI_PEER_GONE " (its process was killed, or "
             "its host went down or rebooted)",
             flm_peer_name(w->m, rank, pn, sizeof pn));
    fl_mpi_fail(w->m, msg);
}

/* Reads what peer i has sent; marks it closed at its end. */
static void take(FlmWatch *w, Peer *p) {
    unsigned char buf[64];
    ssize_t n = recv(p->fd, buf, sizeof buf, MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
    if (n <= 0) {
        p->closed = true;
        return;
    }
    for (ssize_t k = 0; k < n; k++) {
        if (p->got < 4) {
            p->hello[p->got++] = buf[k];
            if (p->got == 4) {
                uint32_t r;
                memcpy(&r, p->hello, 4);
                r = ntohl(r);
                if ((int)r > 0 && (int)r < w->m->size) p->rank = (int)r;
            }
        } else if (buf[k] == 'B') {
            p->bye = true;
        } else if (buf[k] == 'A') {
            w->aborting = true;
        }
    }
}

static void *watch_main(void *arg) {
    FlmWatch *w = arg;
    block_term();
    for (;;) {
        size_t np = w->peers.len;
        struct pollfd *fds = fl_xcalloc(np + 2, sizeof *fds);
        fds[0] = (struct pollfd){.fd = w->wake[0], .events = POLLIN};
        fds[1] = (struct pollfd){.fd = w->lfd, .events = POLLIN};
        for (size_t i = 0; i < np; i++)
            fds[i + 2] = (struct pollfd){.fd = w->peers.data[i].closed ? -1 : w->peers.data[i].fd, .events = POLLIN};
        int rc = poll(fds, np + 2, -1);
        if (rc < 0 && errno != EINTR) {
            free(fds);
            return NULL;
        }
        bool stop = fds[0].revents != 0, accept_one = w->lfd >= 0 && (fds[1].revents & POLLIN);
        bool any_closed = false;
        for (size_t i = 0; i < np; i++)
            if (fds[i + 2].revents) {
                Peer *p = &w->peers.data[i];
                take(w, p);
                any_closed |= p->closed && !p->bye && (w->lfd < 0 || p->rank > 0);
            }
        free(fds);
        if (stop) return NULL;
        if (w->aborting) { /* a rank fails and says so: pass it on, report nothing more */
            if (w->lfd >= 0) say_all(w, 'A');
            return NULL;
        }
        if (any_closed && !(terminating && w->lfd < 0))
            for (size_t i = 0; i < w->peers.len; i++) {
                Peer *p = &w->peers.data[i];
                if (p->closed && !p->bye && (w->lfd < 0 || p->rank > 0)) lost(w, w->lfd < 0 ? 0 : p->rank);
            }
        if (accept_one) {
            int fd = accept4(w->lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
            if (fd >= 0) {
                pthread_mutex_lock(&w->mu);
                FL_VEC_PUSH(&w->peers, ((Peer){.fd = fd, .rank = -1}));
                pthread_mutex_unlock(&w->mu);
            }
        }
    }
}

/* A non-blocking connect to addr:port, given up after CONNECT_WAIT_MS or when woken. */
static int try_connect(FlmWatch *w, uint32_t addr, uint16_t port) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) return -1;
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = port, .sin_addr.s_addr = addr};
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0) return fd;
    if (errno == EINPROGRESS) {
        struct pollfd f[2] = {{.fd = fd, .events = POLLOUT}, {.fd = w->wake[0], .events = POLLIN}};
        int err = 0;
        socklen_t len = sizeof err;
        if (poll(f, 2, CONNECT_WAIT_MS) > 0 && !f[1].revents && (f[0].revents & POLLOUT) &&
            getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err == 0)
            return fd;
    }
    close(fd);
    return -1;
}

/* A rank but 0: its connection to the hub, then the wait on it. */
static void *client_main(void *arg) {
    FlmWatch *w = arg;
    FlMpi *m = w->m;
    block_term();
    uint32_t lo = htonl(INADDR_LOOPBACK);
    int fd = -1;
    if (!strcmp(m->host_of[0], m->host_of[m->rank])) fd = try_connect(w, lo, w->wa.port);
    for (int i = 0; fd < 0 && i < w->wa.n && i < WATCH_ADDRS; i++) fd = try_connect(w, w->wa.addr[i], w->wa.port);
    if (fd < 0) return NULL; /* rank 0 is not reachable this way: this rank is not watched */
    uint32_t r = htonl((uint32_t)m->rank);
    if (send(fd, &r, 4, MSG_NOSIGNAL) != 4) {
        close(fd);
        return NULL;
    }
    pthread_mutex_lock(&w->mu);
    FL_VEC_PUSH(&w->peers, ((Peer){.fd = fd, .rank = 0, .got = 4}));
    pthread_mutex_unlock(&w->mu);
    return watch_main(w);
}

/* The hub's IPv4 addresses: those of its interfaces that are up, the loopback last. */
static void hub_addrs(WatchAddr *wa) {
    struct ifaddrs *ifa = NULL;
    wa->n = 0;
    if (getifaddrs(&ifa) != 0) return;
    for (int pass = 0; pass < 2; pass++)
        for (struct ifaddrs *i = ifa; i; i = i->ifa_next) {
            if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET || !(i->ifa_flags & IFF_UP)) continue;
            if (((i->ifa_flags & IFF_LOOPBACK) != 0) != (pass == 1)) continue;
            if (wa->n < WATCH_ADDRS) wa->addr[wa->n++] = ((struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr;
        }
    freeifaddrs(ifa);
}

void flm_watch_start(FlMpi *m) {
    if (!m->hosts || m->size < 2) return; /* one machine: mpirun sees a dead rank at once, and says which */
    FlmWatch *w = fl_xcalloc(1, sizeof *w);
    w->m = m;
    w->lfd = -1;
    pthread_mutex_init(&w->mu, NULL);
    if (m->rank == 0) {
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_ANY)};
        socklen_t len = sizeof sa;
        if (fd >= 0 && bind(fd, (struct sockaddr *)&sa, sizeof sa) == 0 && listen(fd, 128) == 0 &&
            getsockname(fd, (struct sockaddr *)&sa, &len) == 0) {
            w->lfd = fd;
            w->wa.port = sa.sin_port;
            hub_addrs(&w->wa);
        } else if (fd >= 0) {
            close(fd);
        }
    }
    MPI_Request req;
    FlErr e;
    int rc = MPI_Ibcast(&w->wa, (int)sizeof w->wa, MPI_BYTE, 0, MPI_COMM_WORLD, &req);
    if (rc != MPI_SUCCESS) flm_mpi_err(&e, rc, "telling the ranks where rank 0 watches");
    if (rc != MPI_SUCCESS || flm_wait_req(m, &req, NULL, 0, "telling the ranks where rank 0 watches", &e) != FL_OK)
        fl_mpi_fail(m, e.msg);
    if (!w->wa.port || pipe2(w->wake, O_CLOEXEC) != 0) {
        if (w->lfd >= 0) close(w->lfd);
        pthread_mutex_destroy(&w->mu);
        free(w);
        return;
    }
    w->on = pthread_create(&w->thread, NULL, m->rank == 0 ? watch_main : client_main, w) == 0;
    m->watch = w;
    term_wait_ms = m->rank == 0 ? TERM_WAIT_HUB_MS : TERM_WAIT_MS;
    struct sigaction sa = {.sa_handler = on_term};
    sigemptyset(&sa.sa_mask);
    if (w->on) sigaction(SIGTERM, &sa, NULL);
}

void flm_watch_say(FlMpi *m, char c) {
    if (m->watch) say_all(m->watch, c);
}

void flm_watch_stop(FlMpi *m) {
    FlmWatch *w = m->watch;
    if (!w) return;
    signal(SIGTERM, SIG_DFL);
    say_all(w, 'B');
    if (w->on) {
        (void)!write(w->wake[1], "x", 1);
        pthread_join(w->thread, NULL);
    }
    for (size_t i = 0; i < w->peers.len; i++) close(w->peers.data[i].fd);
    FL_VEC_FREE(&w->peers);
    if (w->lfd >= 0) close(w->lfd);
    close(w->wake[0]);
    close(w->wake[1]);
    pthread_mutex_destroy(&w->mu);
    free(w);
    m->watch = NULL;
}
