/* flswitch: the test cluster's shaping switch (tests/cluster/cluster.sh, docs/cluster.md).
 *
 *   flswitch --ports N [--rate L] [--delay L] [--loss L] [--queue BYTES] [--seed S]
 *            [--mtu M] [--name PREFIX] [--ready FILE] [--parent PID] [--control FIFO]
 *
 * Makes N TAP devices PREFIX1..PREFIXN (default t1..tN) in its network namespace; cluster.sh
 * moves each into a host's namespace, where it is the host's eth0 (a TAP keeps working when it
 * changes namespace: its file stays open here). The switch reads the Ethernet frames the hosts
 * send, learns which MAC sits behind which port, floods broadcasts and unknown destinations, and
 * writes each frame to its destination's TAP after the shaping of both links it crosses: host A's
 * link on the way up (A -> switch), host B's on the way down (switch -> B). Each direction of
 * a host's link is a pipe with
 *   - a rate (bits/s of Ethernet frames, header included): a frame takes len * 8 / rate to be
 *     sent, after the frames before it; those waiting may hold at most --queue bytes (default
 *     40 ms at the rate, at least 256 KiB), a frame beyond is dropped (tail drop);
 *   - a one-way delay, added once the frame is sent;
 *   - a loss: each frame is dropped with that probability (a PRNG seeded by --seed).
 * A frame from A to B thus takes A's delay plus B's, and a ping's round trip twice that. Rate,
 * delay and loss are lists like cluster.sh's --slots: the I-th value for host I, the last for the
 * hosts beyond it. Frames wait in a min-heap by due time; one thread polls the TAPs (ppoll,
 * nanosecond timeout, 1 us timer slack) and sends what is due.
 *
 * --control FIFO: lines "SEQ HOST RATE DELAY LOSS" written to the FIFO (cluster.sh shape) change
 * a host's link while the switch runs (each value, or "-" to keep it; frames already under way keep
 * their due time); the switch answers "SEQ ok" or "SEQ error: ..." in FIFO.ack.
 *
 * It ends on SIGTERM, SIGINT or SIGHUP, printing each port's counters to stderr (SIGUSR1 prints
 * them and goes on), and with --parent PID when that process ends (PR_SET_PDEATHSIG); closing
 * the TAPs removes them, in whichever namespace they are. --ready FILE is written once the TAPs
 * exist.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_PORTS 250
#define MAC_SLOTS 4096        /* learned MACs (open addressing); more are flooded */
#define MEM_LIMIT (256u << 20) /* frame memory of the whole switch; beyond it frames are dropped */
#define BATCH 64              /* frames read from one TAP before looking at the others */

/* One direction of a host's link. */
typedef struct Pipe {
    double rate;          /* bits per second; 0: no limit */
    uint64_t delay;       /* ns */
    uint64_t loss;        /* a frame is lost when the PRNG's 64 bits fall below it */
    bool lose_all;        /* loss 100% */
    double queue;         /* bytes that may wait to be sent */
    uint64_t busy;        /* ns: when the frames taken so far are all sent */
    uint64_t frames, bytes, lost, dropped;
} Pipe;

typedef struct Port {
    int fd; /* -1 once its TAP is gone */
    char name[IFNAMSIZ];
    Pipe up, down; /* host -> switch, switch -> host */
    uint64_t write_errors;
    int write_errno; /* the last one's */
} Port;

typedef struct Frame {
    struct Frame *next; /* in the free list */
    uint64_t due, seq;
    uint32_t len;
    uint16_t port; /* stage 0: the port it came from; stage 1: the port it goes to */
    uint8_t stage; /* 0: on the way up to the switch, 1: on the way down to its host */
    uint8_t data[];
} Frame;

typedef struct MacSlot {
    uint64_t mac; /* 0: empty (48 bits, +1 so that no MAC is 0) */
    int port;
} MacSlot;

typedef struct Switch {
    Port ports[MAX_PORTS];
    struct pollfd pfd[MAX_PORTS + 1]; /* the ports', then the control FIFO's */
    int n;
    size_t frame_max; /* bytes of a frame's data */
    Frame **heap;
    size_t hlen, hcap;
    Frame *free_list;
    size_t mem; /* bytes of frames allocated */
    uint64_t seq, rng, overflow;
    double queue;            /* --queue, 0: from the rate */
    int ctl;                 /* --control's FIFO, -1 without */
    char ack[4096];          /* where the answers to its lines go */
    char cbuf[4096];         /* its text not yet read to a newline */
    size_t clen;
    uint8_t scratch[65536];  /* a frame read to be dropped */
    MacSlot macs[MAC_SLOTS];
} Switch;

static volatile sig_atomic_t stop_signal, counters_signal;

static void on_signal(int s) {
    if (s == SIGUSR1) counters_signal = 1;
    else stop_signal = s;
}

__attribute__((format(printf, 1, 2), noreturn)) static void die(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "flswitch: ");
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(1);
}

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t rng_next(Switch *sw) { /* xorshift64* */
    sw->rng ^= sw->rng >> 12;
    sw->rng ^= sw->rng << 25;
    sw->rng ^= sw->rng >> 27;
    return sw->rng * 2685821657736338717ull;
}

/* ---- option values ---------------------------------------------------------------------- */

/* The value of host i (1-based) in a comma list: its item, or the last one. */
static void pick(const char *list, int i, char *out, size_t cap) {
    const char *p = list;
    for (int k = 1; k < i; k++) {
        const char *c = strchr(p, ',');
        if (!c) break;
        p = c + 1;
    }
    size_t len = strcspn(p, ",");
    if (len >= cap) len = cap - 1;
    memcpy(out, p, len);
    out[len] = 0;
}

/* A number followed by one of units[] (scaled by scale[]); false when it is not. */
static bool number_unit(const char *s, const char *const *units, const double *scale, double *v) {
    char *end;
    errno = 0;
    double x = strtod(s, &end);
    if (end == s || errno || x < 0 || x != x) return false;
    for (int i = 0; units[i]; i++)
        if (!strcmp(end, units[i])) {
            *v = x * scale[i];
            return true;
        }
    return false;
}

static const char *const RATE_HELP = "a rate of at least 1kbit, as a number and a unit: bit, kbit, mbit, gbit "
                                     "(bits/s), bps, kbps, mbps, gbps (bytes/s); or none";
static const char *const DELAY_HELP = "a number and a unit: s, ms, us (at most 10s), or 0";
static const char *const LOSS_HELP = "a percentage from 0% to 100% (1%, 0.5%), or 0";

static bool parse_rate(const char *s, double *rate) { /* 0: no limit */
    static const char *const u[] = {"bit", "kbit", "mbit", "gbit", "bps", "kbps", "mbps", "gbps", NULL};
    static const double k[] = {1, 1e3, 1e6, 1e9, 8, 8e3, 8e6, 8e9};
    *rate = 0;
    return !strcmp(s, "none") || (number_unit(s, u, k, rate) && *rate >= 1000);
}

static bool parse_delay(const char *s, uint64_t *ns) {
    static const char *const u[] = {"s", "ms", "us", NULL};
    static const double k[] = {1e9, 1e6, 1e3};
    double v = 0;
    if (strcmp(s, "0") && (!number_unit(s, u, k, &v) || v > 10e9)) return false;
    *ns = (uint64_t)(v + 0.5);
    return true;
}

static bool parse_loss(const char *s, double *loss) {
    static const char *const u[] = {"%", NULL};
    static const double k[] = {0.01};
    *loss = 0;
    return !strcmp(s, "0") || (number_unit(s, u, k, loss) && *loss <= 1);
}

/* Sets a pipe's shaping (its counters and the frames it holds stay). */
static void pipe_set(Pipe *p, double rate, uint64_t delay, double loss, double queue) {
    p->rate = rate;
    p->delay = delay;
    p->lose_all = loss >= 1;
    p->loss = p->lose_all ? 0 : (uint64_t)(loss * 18446744073709551616.0);
    if (queue > 0) p->queue = queue;
    else p->queue = rate * 0.040 / 8 > 262144 ? rate * 0.040 / 8 : 262144;
}

/* Shapes both directions of port i (host i + 1): each of rate, delay, loss a value, or "-" to
 * keep the port's own. False, with the reason in err, when a value is bad (nothing changes). */
static bool shape_port(Switch *sw, int i, const char *rate, const char *delay, const char *loss, char *err, size_t cap) {
    Pipe *up = &sw->ports[i].up, *down = &sw->ports[i].down;
    double r = up->rate, l = up->lose_all ? 1 : (double)up->loss / 18446744073709551616.0;
    uint64_t d = up->delay;
    if (strcmp(rate, "-") && !parse_rate(rate, &r)) {
        snprintf(err, cap, "bad --rate '%s' for host%d: %s", rate, i + 1, RATE_HELP);
        return false;
    }
    if (strcmp(delay, "-") && !parse_delay(delay, &d)) {
        snprintf(err, cap, "bad --delay '%s' for host%d: %s", delay, i + 1, DELAY_HELP);
        return false;
    }
    if (strcmp(loss, "-") && !parse_loss(loss, &l)) {
        snprintf(err, cap, "bad --loss '%s' for host%d: %s", loss, i + 1, LOSS_HELP);
        return false;
    }
    pipe_set(up, r, d, l, sw->queue);
    pipe_set(down, r, d, l, sw->queue);
    return true;
}

/* ---- frames and the heap of due frames -------------------------------------------------- */

static Frame *frame_new(Switch *sw) {
    Frame *f = sw->free_list;
    if (f) {
        sw->free_list = f->next;
        return f;
    }
    size_t size = sizeof(Frame) + sw->frame_max;
    if (sw->mem + size > MEM_LIMIT) return NULL;
    f = malloc(size);
    if (f) sw->mem += size;
    return f;
}

static void frame_free(Switch *sw, Frame *f) {
    f->next = sw->free_list;
    sw->free_list = f;
}

static bool before(const Frame *a, const Frame *b) { return a->due < b->due || (a->due == b->due && a->seq < b->seq); }

static bool heap_push(Switch *sw, Frame *f) {
    if (sw->hlen == sw->hcap) {
        size_t cap = sw->hcap ? 2 * sw->hcap : 1024;
        Frame **h = realloc(sw->heap, cap * sizeof *h);
        if (!h) return false;
        sw->heap = h;
        sw->hcap = cap;
    }
    f->seq = sw->seq++;
    size_t i = sw->hlen++;
    while (i > 0 && before(f, sw->heap[(i - 1) / 2])) {
        sw->heap[i] = sw->heap[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    sw->heap[i] = f;
    return true;
}

static Frame *heap_pop(Switch *sw) {
    Frame *top = sw->heap[0], *last = sw->heap[--sw->hlen];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= sw->hlen) break;
        if (c + 1 < sw->hlen && before(sw->heap[c + 1], sw->heap[c])) c++;
        if (!before(sw->heap[c], last)) break;
        sw->heap[i] = sw->heap[c];
        i = c;
    }
    if (sw->hlen) sw->heap[i] = last;
    return top;
}

/* ---- forwarding ------------------------------------------------------------------------- */

/* A frame of len bytes enters pipe p at time t: false when it is lost or the queue is full,
 * else its due time (sent after those before it, then the delay). */
static bool pipe_take(Switch *sw, Pipe *p, uint32_t len, uint64_t t, uint64_t *due) {
    if (p->lose_all || (p->loss && rng_next(sw) < p->loss)) {
        p->lost++;
        return false;
    }
    uint64_t start = p->busy > t ? p->busy : t;
    if (p->rate > 0) {
        double waiting = (double)(start - t) * 1e-9 * p->rate / 8;
        if (waiting + len > p->queue) {
            p->dropped++;
            return false;
        }
        p->busy = start + (uint64_t)((double)len * 8e9 / p->rate + 0.5);
        *due = p->busy + p->delay;
    } else {
        *due = t + p->delay;
    }
    p->frames++;
    p->bytes += len;
    return true;
}

static uint64_t mac_key(const uint8_t *m) {
    return ((uint64_t)m[0] << 40 | (uint64_t)m[1] << 32 | (uint64_t)m[2] << 24 | (uint64_t)m[3] << 16 |
            (uint64_t)m[4] << 8 | m[5]) + 1;
}

static MacSlot *mac_slot(Switch *sw, uint64_t key) {
    size_t i = (size_t)((key * 0x9E3779B97F4A7C15ull) >> 52) % MAC_SLOTS;
    for (size_t k = 0; k < MAC_SLOTS / 2; k++, i = (i + 1) % MAC_SLOTS)
        if (sw->macs[i].mac == key || sw->macs[i].mac == 0) return &sw->macs[i];
    return NULL;
}

static void learn(Switch *sw, const uint8_t *src, int port) {
    if (src[0] & 1) return; /* a group address is never a source */
    uint64_t key = mac_key(src);
    MacSlot *s = mac_slot(sw, key);
    if (!s) return;
    s->mac = key;
    s->port = port;
}

/* Puts frame f into port j's downlink at time t (f is taken). */
static void send_down(Switch *sw, Frame *f, int j, uint64_t t) {
    uint64_t due;
    if (sw->ports[j].fd < 0 || !pipe_take(sw, &sw->ports[j].down, f->len, t, &due)) {
        frame_free(sw, f);
        return;
    }
    f->stage = 1;
    f->port = (uint16_t)j;
    f->due = due;
    if (!heap_push(sw, f)) {
        sw->overflow++;
        frame_free(sw, f);
    }
}

/* Frame f reached the switch at f->due: to its destination's downlink, or to every other port's. */
static void forward(Switch *sw, Frame *f) {
    int from = f->port;
    uint64_t t = f->due;
    if (!(f->data[0] & 1)) {
        MacSlot *s = mac_slot(sw, mac_key(f->data));
        if (s && s->mac) {
            if (s->port == from) frame_free(sw, f);
            else send_down(sw, f, s->port, t);
            return;
        }
    }
    for (int j = 0; j < sw->n; j++) {
        if (j == from || sw->ports[j].fd < 0) continue;
        Frame *c = frame_new(sw);
        if (!c) {
            sw->overflow++;
            continue;
        }
        c->len = f->len;
        memcpy(c->data, f->data, f->len);
        send_down(sw, c, j, t);
    }
    frame_free(sw, f);
}

static void deliver(Switch *sw, Frame *f) {
    Port *p = &sw->ports[f->port];
    if (p->fd >= 0 && write(p->fd, f->data, f->len) != (ssize_t)f->len) { /* a link that is down: EIO */
        p->write_errors++;
        p->write_errno = errno;
    }
    frame_free(sw, f);
}

static void port_gone(Switch *sw, int i) {
    fprintf(stderr, "flswitch: %s is gone\n", sw->ports[i].name);
    close(sw->ports[i].fd);
    sw->ports[i].fd = -1;
    sw->pfd[i].fd = -1;
}

/* Reads what port i's host sent (up to BATCH frames) into its uplink. */
static void read_port(Switch *sw, int i) {
    Port *p = &sw->ports[i];
    uint64_t t = now_ns();
    for (int k = 0; k < BATCH && p->fd >= 0; k++) {
        Frame *f = frame_new(sw);
        if (!f) { /* no memory for it: read and drop it (leaving it would wake ppoll at once) */
            ssize_t r = read(p->fd, sw->scratch, sizeof sw->scratch);
            if (r > 0) {
                sw->overflow++;
                continue;
            }
            if (r < 0 && errno == EINTR) continue;
            if (r < 0 && errno != EAGAIN) port_gone(sw, i);
            return;
        }
        ssize_t r = read(p->fd, f->data, sw->frame_max);
        if (r < 0) {
            frame_free(sw, f);
            if (errno == EINTR) continue;
            if (errno != EAGAIN) port_gone(sw, i);
            return;
        }
        uint64_t due;
        if (r < 14 || !pipe_take(sw, &p->up, (uint32_t)r, t, &due)) {
            frame_free(sw, f);
            continue;
        }
        learn(sw, f->data + 6, i);
        f->len = (uint32_t)r;
        f->port = (uint16_t)i;
        f->stage = 0;
        f->due = due;
        if (due <= t) forward(sw, f);
        else if (!heap_push(sw, f)) {
            sw->overflow++;
            frame_free(sw, f);
        }
    }
}

/* Answers line `seq` of the control FIFO in the ack file (written whole, then renamed). */
static void answer(Switch *sw, const char *seq, const char *text) {
    char tmp[sizeof sw->ack + 8];
    snprintf(tmp, sizeof tmp, "%s.tmp", sw->ack);
    FILE *f = fopen(tmp, "w");
    if (!f) return;
    fprintf(f, "%s %s\n", seq, text);
    if (fclose(f) == 0) rename(tmp, sw->ack);
}

/* Lines of the control FIFO: "SEQ HOST RATE DELAY LOSS", HOST 1..N, a value or "-" (keep) each;
 * the answer "SEQ ok" or "SEQ error: ..." goes to the ack file. */
static void control(Switch *sw) {
    ssize_t r = read(sw->ctl, sw->cbuf + sw->clen, sizeof sw->cbuf - 1 - sw->clen);
    if (r <= 0) return;
    sw->clen += (size_t)r;
    sw->cbuf[sw->clen] = 0;
    char *line = sw->cbuf, *nl;
    while ((nl = strchr(line, '\n'))) {
        *nl = 0;
        char seq[32] = "?", rate[64], delay[64], loss[64], err[512];
        int host = 0;
        if (sscanf(line, "%31s %d %63s %63s %63s", seq, &host, rate, delay, loss) != 5)
            answer(sw, seq, "error: a line is SEQ HOST RATE DELAY LOSS");
        else if (host < 1 || host > sw->n) answer(sw, seq, "error: no such host");
        else if (!shape_port(sw, host - 1, rate, delay, loss, err, sizeof err)) {
            char text[600];
            snprintf(text, sizeof text, "error: %s", err);
            answer(sw, seq, text);
        } else {
            fprintf(stderr, "flswitch: host%d now: rate %s, delay %s, loss %s\n", host, rate, delay, loss);
            answer(sw, seq, "ok");
        }
        line = nl + 1;
    }
    sw->clen = strlen(line);
    memmove(sw->cbuf, line, sw->clen);
    if (sw->clen == sizeof sw->cbuf - 1) sw->clen = 0; /* a line too long: dropped */
}

static int tap_open(const char *name, int mtu) {
    int fd = open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) die("cannot open /dev/net/tun: %s (the kernel's tun module, root)", strerror(errno));
    struct ifreq ifr;
    memset(&ifr, 0, sizeof ifr);
    ifr.ifr_flags = IFF_TAP | IFF_NO_PI;
    snprintf(ifr.ifr_name, IFNAMSIZ, "%s", name);
    if (ioctl(fd, TUNSETIFF, &ifr) < 0) die("cannot make TAP device %s: %s", name, strerror(errno));
    int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    memset(&ifr, 0, sizeof ifr);
    snprintf(ifr.ifr_name, IFNAMSIZ, "%s", name);
    ifr.ifr_mtu = mtu;
    if (s < 0 || ioctl(s, SIOCSIFMTU, &ifr) < 0) die("cannot set the MTU of %s: %s", name, strerror(errno));
    close(s);
    return fd;
}

static void print_counters(Switch *sw) {
    fprintf(stderr, "flswitch: port  direction  frames  bytes  lost  dropped(queue full)\n");
    for (int i = 0; i < sw->n; i++) {
        Port *p = &sw->ports[i];
        fprintf(stderr, "flswitch: %s up %llu %llu %llu %llu\n", p->name, (unsigned long long)p->up.frames,
                (unsigned long long)p->up.bytes, (unsigned long long)p->up.lost, (unsigned long long)p->up.dropped);
        fprintf(stderr, "flswitch: %s down %llu %llu %llu %llu (write errors %llu%s%s)\n", p->name,
                (unsigned long long)p->down.frames, (unsigned long long)p->down.bytes, (unsigned long long)p->down.lost,
                (unsigned long long)p->down.dropped, (unsigned long long)p->write_errors, p->write_errors ? ", the last: " : "",
                p->write_errors ? strerror(p->write_errno) : "");
    }
    if (sw->overflow) fprintf(stderr, "flswitch: %llu frames dropped for want of memory\n", (unsigned long long)sw->overflow);
    fflush(stderr);
}

static const char *value(int argc, char **argv, int *i) {
    if (*i + 1 >= argc) die("%s needs a value", argv[*i]);
    return argv[++*i];
}

int main(int argc, char **argv) {
    static Switch sw;
    const char *rate = "none", *delay = "0", *loss = "0", *name = "t", *ready = NULL, *ctl = NULL;
    double queue = 0;
    long n = 0, mtu = 9000, parent = 0;
    unsigned long long seed = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        char *end;
        if (!strcmp(a, "--ports")) {
            const char *v = value(argc, argv, &i);
            n = strtol(v, &end, 10);
            if (*end || n < 1 || n > MAX_PORTS) die("bad --ports '%s' (1..250)", v);
        } else if (!strcmp(a, "--rate")) rate = value(argc, argv, &i);
        else if (!strcmp(a, "--delay")) delay = value(argc, argv, &i);
        else if (!strcmp(a, "--loss")) loss = value(argc, argv, &i);
        else if (!strcmp(a, "--name")) {
            name = value(argc, argv, &i);
            if (!*name || strlen(name) > 10) die("bad --name '%s' (1..10 characters)", name);
        } else if (!strcmp(a, "--ready")) ready = value(argc, argv, &i);
        else if (!strcmp(a, "--control")) ctl = value(argc, argv, &i);
        else if (!strcmp(a, "--queue")) {
            const char *v = value(argc, argv, &i);
            queue = strtod(v, &end);
            if (*end || end == v || queue < 9100 || queue > 1e9) die("bad --queue '%s' (bytes, 9100..1e9)", v);
        } else if (!strcmp(a, "--mtu")) {
            const char *v = value(argc, argv, &i);
            mtu = strtol(v, &end, 10);
            if (*end || mtu < 576 || mtu > 65000) die("bad --mtu '%s' (576..65000)", v);
        } else if (!strcmp(a, "--seed")) {
            const char *v = value(argc, argv, &i);
            seed = strtoull(v, &end, 10);
            if (*end || end == v) die("bad --seed '%s' (a number)", v);
        } else if (!strcmp(a, "--parent")) {
            const char *v = value(argc, argv, &i);
            parent = strtol(v, &end, 10);
            if (*end || parent < 1) die("bad --parent '%s' (a pid)", v);
        } else die("unknown option '%s' (see the comment at the top of tests/cluster/flswitch.c)", a);
    }
    if (!n) die("--ports N is needed");

    /* the signals wait blocked, and reach ppoll only: no frame is cut in half */
    sigset_t block, during;
    sigemptyset(&block);
    sigaddset(&block, SIGTERM);
    sigaddset(&block, SIGINT);
    sigaddset(&block, SIGHUP);
    sigaddset(&block, SIGUSR1);
    sigprocmask(SIG_BLOCK, &block, &during);
    sigdelset(&during, SIGTERM);
    sigdelset(&during, SIGINT);
    sigdelset(&during, SIGHUP);
    sigdelset(&during, SIGUSR1);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    sigaction(SIGUSR1, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    if (parent) {
        if (prctl(PR_SET_PDEATHSIG, SIGTERM) < 0 || getppid() != parent) die("its parent %ld is gone", parent);
    } else {
        setsid(); /* a switch made by `cluster.sh up` outlives the terminal */
    }
    prctl(PR_SET_TIMERSLACK, 1000UL); /* wake-ups within 1 us of a frame's due time */

    sw.n = (int)n;
    sw.queue = queue;
    sw.ctl = -1;
    if (ctl) {
        /* read and write: the FIFO never reads as ended when a writer closes it */
        sw.ctl = open(ctl, O_RDWR | O_NONBLOCK | O_CLOEXEC);
        if (sw.ctl < 0) die("cannot open the control FIFO %s: %s", ctl, strerror(errno));
        snprintf(sw.ack, sizeof sw.ack, "%s.ack", ctl);
    }
    sw.frame_max = (size_t)mtu + 18; /* Ethernet header and a VLAN tag */
    sw.rng = seed * 0x9E3779B97F4A7C15ull + 0x632BE59BD9B4E019ull;
    if (!sw.rng) sw.rng = 1;
    const char *lists[3][2] = {{"--rate", rate}, {"--delay", delay}, {"--loss", loss}};
    for (int k = 0; k < 3; k++) {
        long items = 1;
        for (const char *c = lists[k][1]; *c; c++) items += *c == ',';
        if (items > n) die("%s '%s' has more values than there are hosts", lists[k][0], lists[k][1]);
    }
    for (int i = 0; i < sw.n; i++) {
        char r[64], d[64], l[64], err[512];
        pick(rate, i + 1, r, sizeof r);
        pick(delay, i + 1, d, sizeof d);
        pick(loss, i + 1, l, sizeof l);
        if (!shape_port(&sw, i, r, d, l, err, sizeof err)) die("%s", err);
    }
    for (int i = 0; i < sw.n; i++) {
        Port *p = &sw.ports[i];
        snprintf(p->name, sizeof p->name, "%s%d", name, i + 1);
        p->fd = tap_open(p->name, (int)mtu);
        sw.pfd[i].fd = p->fd;
        sw.pfd[i].events = POLLIN;
    }
    sw.pfd[sw.n].fd = sw.ctl; /* ignored when -1 */
    sw.pfd[sw.n].events = POLLIN;
    if (ready) {
        FILE *f = fopen(ready, "w");
        if (!f || fprintf(f, "%d\n", (int)getpid()) < 0 || fclose(f)) die("cannot write %s", ready);
    }

    while (!stop_signal) {
        if (counters_signal) {
            counters_signal = 0;
            print_counters(&sw);
        }
        uint64_t t = now_ns();
        while (sw.hlen && sw.heap[0]->due <= t) {
            Frame *f = heap_pop(&sw);
            if (f->stage == 0) forward(&sw, f);
            else deliver(&sw, f);
        }
        struct timespec ts, *timeout = NULL;
        if (sw.hlen) {
            uint64_t wait = sw.heap[0]->due - t;
            ts.tv_sec = (time_t)(wait / 1000000000u);
            ts.tv_nsec = (long)(wait % 1000000000u);
            timeout = &ts;
        }
        int r = ppoll(sw.pfd, (nfds_t)sw.n + 1, timeout, &during);
        if (r < 0) {
            if (errno == EINTR) continue;
            die("poll: %s", strerror(errno));
        }
        for (int i = 0; i < sw.n && r > 0; i++) {
            short ev = sw.pfd[i].revents;
            if (!ev) continue;
            if (ev & POLLIN) read_port(&sw, i);
            if (sw.ports[i].fd >= 0 && (ev & (POLLERR | POLLHUP | POLLNVAL))) port_gone(&sw, i);
        }
        if (sw.pfd[sw.n].revents & POLLIN) control(&sw);
    }
    print_counters(&sw);
    for (int i = 0; i < sw.n; i++)
        if (sw.ports[i].fd >= 0) close(sw.ports[i].fd);
    return 0;
}
