/* launch.c: the launcher of `flrun PLAN` outside mpirun (launch.h).
 *
 * How: the hosts come from --hosts or --hostfile (Open MPI's hostfile syntax, "NAME [slots=N]"
 * per line); the ranks fill their slots in order, trainers first (ranks 0..T-1), as mpirun
 * places them by slot. mpirun runs in a process group of its own with its stderr on a pipe that
 * the launcher copies to its own, line by line, watching for a rank's error ("flrun: rank R
 * (...): error: ...") or mpirun's notice of a lost rank or daemon. From the first such line,
 * mpirun has FL_LAUNCH_GRACE seconds to end; then its group (mpirun, its local ranks and agents)
 * gets SIGKILL. A signal to the launcher (INT, TERM, HUP) goes to mpirun, with the same grace.
 *
 * Invariants: the launcher never leaves mpirun running when it returns (waited for, killed at
 * worst); it sends signals only to the processes it started (mpirun's group).
 */
#define _GNU_SOURCE
#include "tools/launch.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/base.h"
#include "runtime/mpi/mpi.h"
#include "runtime/train/ckpt.h"

extern char **environ;

typedef struct Host {
    char *name;
    int slots;
} Host;
typedef FL_VEC(Host) Hosts;
typedef FL_VEC(char *) Argv;

/* The signal the launcher was sent (INT, TERM, HUP), for the loop to pass on: a handler may
 * only set such a flag. */
static volatile sig_atomic_t got_signal;
static void on_signal(int sig) { got_signal = sig; }

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

bool fl_launch_under_mpi(void) {
    static const char *vars[] = {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE"};
    for (size_t i = 0; i < FL_ARRAY_LEN(vars); i++)
        if (getenv(vars[i])) return true;
    return false;
}

/* ---------------------------------------------------------------- hosts */

static void hosts_free(Hosts *h) {
    for (size_t i = 0; i < h->len; i++) free(h->data[i].name);
    FL_VEC_FREE(h);
}

/* A host name: letters, digits, '.', '-', '_' (what mpirun's --host takes without quoting). */
static bool good_name(const char *s, size_t n) {
    if (!n) return false;
    for (size_t i = 0; i < n; i++)
        if (!(s[i] >= 'a' && s[i] <= 'z') && !(s[i] >= 'A' && s[i] <= 'Z') && !(s[i] >= '0' && s[i] <= '9') &&
            s[i] != '.' && s[i] != '-' && s[i] != '_')
            return false;
    return true;
}

static bool parse_slots(const char *s, size_t n, int *out) {
    long v = 0;
    if (!n || n > 6) return false;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') return false;
        v = v * 10 + (s[i] - '0');
    }
    if (v < 1) return false;
    *out = (int)v;
    return true;
}

static bool add_host(Hosts *h, const char *name, size_t n, int slots, FlErr *e, const char *where) {
    for (size_t i = 0; i < h->len; i++)
        if (strlen(h->data[i].name) == n && !memcmp(h->data[i].name, name, n)) {
            fl_err(e, "%s: host '%.*s' is listed twice", where, (int)n, name);
            return false;
        }
    FL_VEC_PUSH(h, ((Host){fl_xstrndup(name, n), slots}));
    return true;
}

/* --hosts "host1:2,host2,host3:4" (slots 1 when not given). */
static bool parse_hosts(const char *spec, Hosts *h, FlErr *e) {
    const char *p = spec;
    for (;;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        const char *colon = memchr(p, ':', len);
        size_t nlen = colon ? (size_t)(colon - p) : len;
        int slots = 1;
        if (!good_name(p, nlen) || (colon && !parse_slots(colon + 1, len - nlen - 1, &slots))) {
            fl_err(e, "--hosts: expected HOST or HOST:SLOTS (slots a number from 1), found '%.*s' in '%s'", (int)len, p,
                   spec);
            return false;
        }
        if (!add_host(h, p, nlen, slots, e, "--hosts")) return false;
        if (!end) return true;
        p = end + 1;
    }
}

/* An Open MPI hostfile: "NAME [slots=N]" per line, '#' comments and blank lines. */
static bool parse_hostfile(const char *path, Hosts *h, FlErr *e) {
    size_t len;
    char *text = fl_read_regular_file(path, &len, e);
    if (!text) {
        char msg[sizeof e->msg];
        snprintf(msg, sizeof msg, "%s", e->msg);
        fl_err(e, "--hostfile: %s", msg);
        return false;
    }
    bool ok = true;
    int line = 0;
    char where[1100];
    for (char *l = text; ok && l < text + len; line++) {
        char *nl = memchr(l, '\n', (size_t)(text + len - l));
        size_t n = nl ? (size_t)(nl - l) : (size_t)(text + len - l);
        char *hash = memchr(l, '#', n);
        if (hash) n = (size_t)(hash - l);
        snprintf(where, sizeof where, "%s:%d", path, line + 1);
        /* the words of the line */
        const char *w[3];
        size_t wl[3];
        int nw = 0;
        for (size_t i = 0; i < n;) {
            while (i < n && (l[i] == ' ' || l[i] == '\t' || l[i] == '\r')) i++;
            if (i >= n) break;
            size_t s = i;
            while (i < n && l[i] != ' ' && l[i] != '\t' && l[i] != '\r') i++;
            if (nw < 3) w[nw] = l + s, wl[nw] = i - s;
            nw++;
        }
        int slots = 1;
        if (nw == 0) {
        } else if (nw > 2 || !good_name(w[0], wl[0]) ||
                   (nw == 2 && (wl[1] < 7 || memcmp(w[1], "slots=", 6) || !parse_slots(w[1] + 6, wl[1] - 6, &slots)))) {
            fl_err(e, "%s: expected 'HOST' or 'HOST slots=N', found '%.*s'", where, (int)n, l);
            ok = false;
        } else {
            ok = add_host(h, w[0], wl[0], slots, e, where);
        }
        l += (nl ? (size_t)(nl - l) + 1 : (size_t)(text + len - l));
    }
    if (ok && !h->len) ok = fl_err(e, "--hostfile %s lists no host", path) == FL_OK;
    free(text);
    return ok;
}

/* "host1:2,host2:1": the slots of hosts the job's n ranks take, filled in order. */
static void host_arg(const Hosts *h, int n, FlBuf *out) {
    for (size_t i = 0; i < h->len && n > 0; i++) {
        int s = h->data[i].slots < n ? h->data[i].slots : n;
        fl_buf_printf(out, "%s%s:%d", out->len ? "," : "", h->data[i].name, s);
        n -= s;
    }
}

static int total_slots(const Hosts *h) {
    int n = 0;
    for (size_t i = 0; i < h->len; i++) n += h->data[i].slots;
    return n;
}

/* ---------------------------------------------------------------- the command */

static void push(Argv *a, const char *s) { FL_VEC_PUSH(a, fl_xstrdup(s)); }

static void argv_free(Argv *a) {
    for (size_t i = 0; i < a->len; i++) free(a->data[i]);
    FL_VEC_FREE(a);
}

/* The environment variables flrun and its libraries read reach every rank (mpirun passes a
 * remote rank only what -x names). */
static bool forwarded(const char *var) {
    static const char *prefixes[] = {"FL_", "FLUIDC_", "OPENBLAS_", "OMP_"};
    for (size_t i = 0; i < FL_ARRAY_LEN(prefixes); i++)
        if (!strncmp(var, prefixes[i], strlen(prefixes[i]))) return true;
    return false;
}

/* ---------------------------------------------------------------- running mpirun */

typedef struct Job {
    pid_t pid;     /* mpirun, the leader of its process group */
    int err;       /* the read end of its stderr */
    FlBuf line;    /* a line not complete yet */
    double failed; /* when a rank reported an error or mpirun a lost rank; 0: not yet */
    bool killed;   /* the watchdog ended mpirun */
    bool signalled; /* the launcher's signal was passed on */
    bool lost;     /* a rank said it lost a peer, or mpirun a rank or a daemon */
    bool program;  /* flrun said an error of its own (its program, data, options) */
    int status;    /* waitpid's */
    bool done;
    const char *self; /* flrun's path: mpirun's children running it are its local ranks */
} Job;

static bool has(const char *l, size_t n, const char *what) { return memmem(l, n, what, strlen(what)) != NULL; }

/* A line of what mpirun prints (the ranks' stderr and its own): a rank's error, or mpirun's
 * notice that a rank or a daemon is lost, starts the watchdog; and each tells whether the job
 * failed for a lost rank or host (worth a restart) or for an error of the program's own. */
static void scan_line(Job *j, const char *l, size_t n) {
    static const char *lost[] = {"exited on signal", "lost communication with a remote daemon",
                                 "ORTE has lost communication"};
    bool flrun = n > 7 && !memcmp(l, "flrun: ", 7) && (has(l, n, "error") || has(l, n, "Try 'flrun --help'"));
    bool peer = flrun && (has(l, n, FL_MPI_PEER_TIMEOUT) || has(l, n, FL_MPI_PEER_GONE));
    bool gone = false;
    for (size_t i = 0; i < FL_ARRAY_LEN(lost); i++) gone |= has(l, n, lost[i]);
    j->lost |= peer || gone;
    j->program |= flrun && !peer;
    if ((flrun || gone || has(l, n, "MPI_ABORT was invoked")) && !j->failed) j->failed = now();
}

/* Copies what mpirun printed to stderr, scanning its lines; returns false at end of file. */
static bool pump(Job *j) {
    char buf[4096];
    ssize_t n = read(j->err, buf, sizeof buf);
    if (n < 0) return errno == EINTR || errno == EAGAIN;
    if (n == 0) return false;
    (void)!write(STDERR_FILENO, buf, (size_t)n);
    fl_buf_append(&j->line, buf, (size_t)n);
    char *start = j->line.data, *nl;
    while ((nl = memchr(start, '\n', (size_t)(j->line.data + j->line.len - start)))) {
        scan_line(j, start, (size_t)(nl - start));
        start = nl + 1;
    }
    size_t rest = (size_t)(j->line.data + j->line.len - start);
    memmove(j->line.data, start, rest);
    j->line.len = rest;
    if (j->line.len > 65536) j->line.len = 0; /* no line that long is a rank's */
    return true;
}

/* Starts argv in a process group of its own: its stderr on a pipe (*err) or /dev/null (err
 * NULL), its stdout the launcher's or /dev/null (quiet). Returns its pid, or -1. */
static pid_t spawn(char *const *argv, int *err, bool quiet, FlErr *e) {
    int fds[2] = {-1, -1};
    if (err && pipe2(fds, O_CLOEXEC) != 0) return fl_err(e, "cannot make a pipe: %s", strerror(errno)), -1;
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) {
        if (err) close(fds[0]), close(fds[1]);
        return fl_err(e, "cannot start mpirun: %s", strerror(errno)), -1;
    }
    if (pid == 0) {
        setpgid(0, 0);
        int null = err && !quiet ? -1 : open("/dev/null", O_WRONLY);
        dup2(err ? fds[1] : null, STDERR_FILENO);
        if (quiet) dup2(null, STDOUT_FILENO);
        signal(SIGINT, SIG_DFL);
        signal(SIGTERM, SIG_DFL);
        signal(SIGHUP, SIG_DFL);
        execvp(argv[0], argv);
        fprintf(stderr, "flrun: cannot run mpirun (Open MPI starts the job's ranks): %s\n", strerror(errno));
        _exit(127);
    }
    setpgid(pid, pid); /* also here: a signal may come before the child has run */
    if (err) {
        close(fds[1]);
        *err = fds[0];
        fcntl(*err, F_SETFL, O_NONBLOCK);
    }
    return pid;
}

/* SIGKILL to mpirun's local ranks: its children that run flrun (each in a process group of its
 * own, so the kill of mpirun's group misses them, and they may outlive it). */
static void kill_local_ranks(pid_t mpirun, const char *self) {
    DIR *d = opendir("/proc");
    for (struct dirent *ent; d && (ent = readdir(d));) {
        char path[64], buf[512], exe[4096];
        int pid = atoi(ent->d_name);
        if (pid <= 0) continue;
        snprintf(path, sizeof path, "/proc/%d/stat", pid);
        FILE *f = fopen(path, "r");
        size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
        if (f) fclose(f);
        buf[n] = 0;
        const char *close_paren = strrchr(buf, ')'); /* "pid (comm) state ppid ..." */
        int ppid = 0;
        char state;
        if (!close_paren || sscanf(close_paren + 1, " %c %d", &state, &ppid) != 2 || ppid != mpirun) continue;
        snprintf(path, sizeof path, "/proc/%d/exe", pid);
        ssize_t k = readlink(path, exe, sizeof exe - 1);
        if (k <= 0) continue;
        exe[k] = 0;
        if (!strcmp(exe, self)) kill(pid, SIGKILL);
    }
    if (d) closedir(d);
}

/* The watchdog: mpirun had its grace since the first failure (or since the launcher passed a
 * signal on), then SIGKILL to its local ranks and its group. Not SIGTERM: mpirun takes it for a
 * second Ctrl-C while its abort is in progress, and crashed in its finalisation. */
static void watchdog(Job *j) {
    if (j->failed && !j->killed && now() - j->failed > FL_LAUNCH_GRACE) {
        kill_local_ranks(j->pid, j->self);
        kill(-j->pid, SIGKILL);
        j->killed = true;
    }
}

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
    (void)sb, (void)flag, (void)ftw;
    remove(path);
    return 0;
}

/* A mpirun killed leaves its session directory (Open MPI's files for the job on this machine:
 * $TMPDIR/ompi.HOST.UID/pid.PID); the launcher that killed it removes it. */
static void remove_session(pid_t pid) {
    char host[256], path[1024];
    const char *tmp = getenv("TMPDIR");
    if (gethostname(host, sizeof host) != 0) return;
    host[sizeof host - 1] = 0;
    snprintf(path, sizeof path, "%s/ompi.%s.%u/pid.%d", tmp && *tmp ? tmp : "/tmp", host, (unsigned)geteuid(), (int)pid);
    struct stat sb;
    if (lstat(path, &sb) == 0 && S_ISDIR(sb.st_mode) && sb.st_uid == geteuid())
        nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* Waits for mpirun to end, copying its stderr, calling tick(ctx) every 100 ms or so (NULL:
 * none); returns the exit code flrun passes on. */
static int wait_job(Job *j, void (*tick)(void *), void *ctx) {
    bool eof = false;
    while (!j->done) {
        struct pollfd p = {.fd = eof ? -1 : j->err, .events = POLLIN};
        int rc = poll(&p, 1, 100);
        if (rc > 0 && !pump(j)) eof = true;
        if (got_signal && !j->signalled) { /* passed on: mpirun ends the ranks */
            kill(j->pid, got_signal == SIGINT ? SIGINT : SIGTERM);
            j->signalled = true;
            j->failed = now();
        }
        watchdog(j);
        if (tick) tick(ctx);
        pid_t w = waitpid(j->pid, &j->status, WNOHANG);
        if (w == j->pid) j->done = true;
    }
    /* what is left in the pipe (a process mpirun started may keep it open: no wait for its end) */
    for (int k = 0; !eof && k < 20; k++) {
        struct pollfd p = {.fd = j->err, .events = POLLIN};
        if (poll(&p, 1, 10) <= 0 || !pump(j)) break;
    }
    if (j->line.len) (void)!write(STDERR_FILENO, "\n", 1);
    close(j->err);
    fl_buf_free(&j->line);
    if (j->killed) remove_session(j->pid);
    if (j->killed && !got_signal) {
        fprintf(stderr, "flrun: mpirun did not end the failed job within %.1f s; the launcher ended it\n",
                FL_LAUNCH_GRACE);
        return 1;
    }
    if (WIFEXITED(j->status)) return WEXITSTATUS(j->status);
    return WIFSIGNALED(j->status) ? 128 + WTERMSIG(j->status) : 1;
}

/* ---------------------------------------------------------------- hosts that answer */

/* Probes of hosts running: a job of one process (`true`) started on each by mpirun, as the
 * job's ranks are; a host answers when it ends well within FL_LAUNCH_PROBE_WAIT s. */
typedef struct Probe {
    pid_t *pid; /* per host: its probe's mpirun, 0: none */
    size_t n;
    double t0;
    bool on;
} Probe;

typedef struct Launch {
    const FlLaunchOptions *o;
    Hosts hosts; /* as given (a hostfile's hosts added since appended), in order */
    bool *up;    /* per host: it answered its last probe (every host until probed) */
    char *self, *plan;
    /* elastic (--elastic): the running attempt's trainers, and its watch for hosts coming back */
    int trainers;
    Probe watch;
    double watched; /* when the last watch ended */
    bool *was_up;   /* per host (nwas of them): it answered when the attempt started */
    size_t nwas;
    bool stop_asked;
} Launch;

/* "HH:MM:SS", the launcher's notes' time. */
static void note(const char *fmt, ...) FL_PRINTF(1, 2);
static void note(const char *fmt, ...) {
    char when[16];
    time_t t = time(NULL);
    struct tm tm;
    strftime(when, sizeof when, "%H:%M:%S", localtime_r(&t, &tm));
    FlBuf b = {0};
    va_list ap;
    va_start(ap, fmt);
    fl_buf_vprintf(&b, fmt, ap);
    va_end(ap);
    fprintf(stderr, "flrun: launcher %s: %s\n", when, fl_buf_str(&b));
    fl_buf_free(&b);
}

/* The common part of mpirun's commands: root, the network, the keepalive settings. */
static void mpirun_options(const FlLaunchOptions *o, bool hosts, Argv *a) {
    push(a, "mpirun");
    if (geteuid() == 0) push(a, "--allow-run-as-root");
    if (hosts) {
        /* shared memory within a machine, TCP between machines */
        push(a, "--mca"), push(a, "btl"), push(a, "tcp,vader,self");
        /* Open MPI's daemons probe a silent connection: a daemon cut off from mpirun ends its
         * ranks, and mpirun gives up a silent machine, 10-15 s after it fell silent */
        push(a, "--mca"), push(a, "oob_tcp_keepalive_time"), push(a, "5");
        push(a, "--mca"), push(a, "oob_tcp_keepalive_intvl"), push(a, "2");
        push(a, "--mca"), push(a, "oob_tcp_keepalive_probes"), push(a, "5");
    }
    if (o->network) {
        push(a, "--mca"), push(a, "btl_tcp_if_include"), push(a, o->network);
        push(a, "--mca"), push(a, "oob_tcp_if_include"), push(a, o->network);
    }
}

/* Starts probing the hosts (all of them, or those that did not answer last). */
static void probe_start(Launch *L, Probe *p, bool all) {
    p->n = L->hosts.len;
    free(p->pid);
    p->pid = fl_xcalloc(p->n + 1, sizeof *p->pid);
    p->t0 = now();
    p->on = false;
    for (size_t i = 0; i < p->n; i++) {
        if (!all && L->up[i]) continue;
        Argv a = {0};
        mpirun_options(L->o, true, &a);
        FlBuf h = {0};
        fl_buf_printf(&h, "%s:1", L->hosts.data[i].name);
        push(&a, "--host"), push(&a, fl_buf_str(&h)), push(&a, "-np"), push(&a, "1"), push(&a, "true");
        FL_VEC_PUSH(&a, NULL);
        FlErr e;
        pid_t pid = spawn(a.data, NULL, true, &e);
        fl_buf_free(&h);
        argv_free(&a);
        L->up[i] = false;
        if (pid > 0) p->pid[i] = pid, p->on = true;
    }
}

/* Takes the probes that ended (their hosts' up); past FL_LAUNCH_PROBE_WAIT ends the others
 * (those hosts do not answer). Returns whether every probe has ended. */
static bool probe_poll(Launch *L, Probe *p) {
    bool late = now() - p->t0 > FL_LAUNCH_PROBE_WAIT, left = false;
    for (size_t i = 0; i < p->n; i++) {
        int st;
        if (p->pid[i] <= 0) continue;
        if (waitpid(p->pid[i], &st, WNOHANG) == p->pid[i]) {
            L->up[i] = WIFEXITED(st) && WEXITSTATUS(st) == 0;
            p->pid[i] = 0;
        } else if (late) {
            kill(-p->pid[i], SIGKILL);
            waitpid(p->pid[i], NULL, 0);
            remove_session(p->pid[i]);
            p->pid[i] = 0;
        } else {
            left = true;
        }
    }
    p->on = left;
    return !left;
}

/* Every host probed, waited for. */
static void probe(Launch *L) {
    Probe p = {0};
    probe_start(L, &p, true);
    while (!probe_poll(L, &p)) usleep(20000);
    free(p.pid);
}

/* The hostfile read again: hosts added since are appended (not probed yet). */
static void reread_hostfile(Launch *L) {
    if (!L->o->hostfile) return;
    Hosts now_h = {0};
    FlErr e;
    if (parse_hostfile(L->o->hostfile, &now_h, &e)) {
        for (size_t i = 0; i < now_h.len; i++) {
            bool known = false;
            for (size_t k = 0; k < L->hosts.len && !known; k++) known = !strcmp(L->hosts.data[k].name, now_h.data[i].name);
            if (known) continue;
            FL_VEC_PUSH(&L->hosts, ((Host){fl_xstrdup(now_h.data[i].name), now_h.data[i].slots}));
            L->up = fl_xrealloc(L->up, (L->hosts.len + 1) * sizeof *L->up);
            L->up[L->hosts.len - 1] = false;
            note("%s is in %s now", now_h.data[i].name, L->o->hostfile);
        }
    }
    hosts_free(&now_h);
}

/* The hosts that answered (up), in order; their slots in *slots. */
static void usable(const Launch *L, Hosts *out, int *slots) {
    *slots = 0;
    for (size_t i = 0; i < L->hosts.len; i++)
        if (L->up[i]) {
            FL_VEC_PUSH(out, ((Host){L->hosts.data[i].name, L->hosts.data[i].slots}));
            *slots += L->hosts.data[i].slots;
        }
}

/* The trainers a job can run on the hosts that answer: the plan's, or elastic, as many as the
 * free slots take up to its most (fewer than its least: 0). Without hosts: this machine. */
static int trainers_now(const Launch *L) {
    const FlLaunchOptions *o = L->o;
    int slots = 0;
    for (size_t i = 0; i < L->hosts.len; i++) slots += L->up[i] ? L->hosts.data[i].slots : 0;
    if (!o->elastic_max) return !L->hosts.len || slots >= o->trainers + o->pservers ? o->trainers : 0;
    if (!L->hosts.len) return o->elastic_max;
    int t = slots - o->pservers < o->elastic_max ? slots - o->pservers : o->elastic_max;
    return t >= o->elastic_min ? t : 0;
}

/* ---------------------------------------------------------------- the job and its restarts */

/* mpirun's command for the job: its trainers and the pservers on the hosts that answer (none
 * given: this machine); `resume`: the ranks go on from the last checkpoint. */
static void build_command(const Launch *L, int trainers, bool resume, Argv *a) {
    const FlLaunchOptions *o = L->o;
    int n = trainers + o->pservers;
    Hosts hosts = {0};
    int slots;
    usable(L, &hosts, &slots);
    char num[32];
    mpirun_options(o, L->hosts.len > 0, a);
    if (!L->hosts.len) {
        long cores = sysconf(_SC_NPROCESSORS_ONLN);
        if (cores < 1 || n > cores) push(a, "--oversubscribe");
    }
    push(a, "-np");
    snprintf(num, sizeof num, "%d", n);
    push(a, num);
    if (hosts.len) {
        FlBuf h = {0};
        host_arg(&hosts, n, &h);
        push(a, "--host");
        push(a, fl_buf_str(&h));
        fl_buf_free(&h);
    }
    FL_VEC_FREE(&hosts); /* its names are L's */
    for (char **e = environ; *e; e++) {
        const char *eq = strchr(*e, '=');
        if (!eq || !forwarded(*e)) continue;
        push(a, "-x");
        FL_VEC_PUSH(a, fl_xstrndup(*e, (size_t)(eq - *e)));
    }
    push(a, L->self);
    push(a, L->plan);
    bool has_resume = false;
    for (size_t i = 0; i < o->nrank_args; i++) {
        push(a, o->rank_args[i]);
        has_resume |= !strcmp(o->rank_args[i], "--resume");
    }
    if (resume && !has_resume) push(a, "--resume");
    if (o->elastic_max) {
        snprintf(num, sizeof num, "%d", trainers);
        push(a, "--trainers"), push(a, num);
    }
    FL_VEC_PUSH(a, NULL);
}

/* "host1:2,host2:1" of the hosts the job's ranks take. */
static void hosts_text(const Launch *L, int n, FlBuf *out) {
    Hosts use = {0};
    int slots;
    usable(L, &use, &slots);
    if (use.len) host_arg(&use, n, out);
    else fl_buf_puts(out, "this machine");
    FL_VEC_FREE(&use);
}

/* Elastic, while a job runs on fewer trainers than its most: every --reprobe S the
 * hosts that did not answer (and those added to the hostfile) are probed again; when they would
 * give the job more trainers, it is asked to stop at its next checkpoint (DIR/STOP) and then
 * restarts with them. */
static void watch_hosts(void *arg) {
    Launch *L = arg;
    if (L->stop_asked || L->trainers >= L->o->elastic_max || !L->hosts.len) return;
    if (!L->watch.on) {
        if (now() - L->watched < L->o->reprobe) return;
        reread_hostfile(L);
        probe_start(L, &L->watch, false);
        if (L->watch.on) return;
    } else if (!probe_poll(L, &L->watch)) {
        return;
    }
    L->watched = now();
    int t = trainers_now(L);
    if (t <= L->trainers) return;
    FlErr e;
    FlBuf back = {0}; /* the hosts that answer now and did not when the attempt started */
    for (size_t i = 0; i < L->hosts.len; i++)
        if (L->up[i] && (i >= L->nwas || !L->was_up[i]))
            fl_buf_printf(&back, "%s%s", back.len ? ", " : "", L->hosts.data[i].name);
    if (fl_ckpt_ask_stop(L->o->checkpoint, &e) != FL_OK) {
        note("cannot ask the job to stop (%s); it goes on with %d trainers", e.msg, L->trainers);
    } else {
        note("%s answer%s: the job stops at its next checkpoint to go on with %d trainers", fl_buf_str(&back),
             strchr(fl_buf_str(&back), ',') ? "" : "s", t);
        L->stop_asked = true;
    }
    fl_buf_free(&back);
}

/* One attempt of the job with `trainers` trainers. Returns its exit code; *lost and *program
 * say why it failed. */
static int attempt(Launch *L, int trainers, bool resume, bool *lost, bool *program) {
    Argv argv = {0};
    build_command(L, trainers, resume, &argv);
    FlErr e = {{0}};
    Job job = {.self = L->self};
    L->trainers = trainers;
    L->stop_asked = false;
    L->watched = now();
    free(L->was_up);
    L->nwas = L->hosts.len;
    L->was_up = fl_xcalloc(L->nwas + 1, sizeof *L->was_up);
    memcpy(L->was_up, L->up, L->nwas * sizeof *L->up);
    job.pid = spawn(argv.data, &job.err, false, &e);
    argv_free(&argv);
    if (job.pid < 0) {
        fprintf(stderr, "flrun: error: %s\n", e.msg);
        *lost = false, *program = true;
        return 1;
    }
    int rc = wait_job(&job, L->o->elastic_max ? watch_hosts : NULL, L);
    if (L->watch.on) { /* the watch's probes left: ended */
        L->watch.t0 = 0;
        probe_poll(L, &L->watch);
    }
    *lost = job.lost;
    *program = job.program;
    return rc;
}

int fl_launch(const FlLaunchOptions *o) {
    FlErr e = {{0}};
    Launch L = {.o = o};
    int n = o->trainers + o->pservers, least = (o->elastic_max ? o->elastic_min : o->trainers) + o->pservers;
    if ((o->hosts && !parse_hosts(o->hosts, &L.hosts, &e)) || (o->hostfile && !parse_hostfile(o->hostfile, &L.hosts, &e))) {
        fprintf(stderr, "flrun: %s\nTry 'flrun --help'.\n", e.msg);
        hosts_free(&L.hosts);
        return 2;
    }
    if (L.hosts.len && total_slots(&L.hosts) < least) {
        FlBuf h = {0};
        for (size_t i = 0; i < L.hosts.len; i++)
            fl_buf_printf(&h, "%s%s:%d", i ? "," : "", L.hosts.data[i].name, L.hosts.data[i].slots);
        if (o->elastic_max)
            fprintf(stderr, "flrun: the job needs at least %d ranks (%d trainers + %d pservers) but the hosts have %d "
                    "slots (%s)\nTry 'flrun --help'.\n", least, o->elastic_min, o->pservers, total_slots(&L.hosts),
                    fl_buf_str(&h));
        else
            fprintf(stderr, "flrun: the plan needs %d ranks (%d trainers + %d pservers) but the hosts have %d slots (%s)\n"
                    "Try 'flrun --help'.\n", n, o->trainers, o->pservers, total_slots(&L.hosts), fl_buf_str(&h));
        fl_buf_free(&h);
        hosts_free(&L.hosts);
        return 2;
    }
    L.up = fl_xcalloc(L.hosts.len + 1, sizeof *L.up);
    for (size_t i = 0; i < L.hosts.len; i++) L.up[i] = true;
    L.self = realpath("/proc/self/exe", NULL);
    L.plan = realpath(o->plan, NULL);
    int rc = 1;
    if (!L.self || !L.plan) {
        fprintf(stderr, "flrun: error: cannot resolve the path of %s: %s\n", L.self ? o->plan : "flrun", strerror(errno));
        goto done;
    }
    struct sigaction sa = {.sa_handler = on_signal};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    if (o->elastic_max) fl_ckpt_clear_stop(o->checkpoint); /* a request of a launcher before */
    bool resume = false;
    for (int restart = 0;;) {
        bool lost, program;
        int trainers = trainers_now(&L);
        rc = attempt(&L, trainers, resume, &lost, &program);
        resume = o->checkpoint != NULL;
        if (got_signal) break;
        if (o->elastic_max) {
            bool stopped = fl_ckpt_stopped(o->checkpoint);
            fl_ckpt_clear_stop(o->checkpoint);
            if (rc == 0 && stopped) { /* the job stopped at a checkpoint to take the hosts that came */
                FlBuf h = {0};
                int t = trainers_now(&L);
                hosts_text(&L, t + o->pservers, &h);
                char *last = NULL;
                int64_t step = -1;
                if (fl_ckpt_latest(o->checkpoint, &last, &step, &e) != FL_OK) step = -1;
                note("the job stopped after its checkpoint of step %lld: %d ranks (%d trainers, %d pservers) on %s from "
                     "now on", (long long)step, t + o->pservers, t, o->pservers, fl_buf_str(&h));
                free(last);
                fl_buf_free(&h);
                continue;
            }
        }
        if (rc == 0 && !o->elastic_max && o->checkpoint && fl_ckpt_stopped(o->checkpoint))
            note("the job stopped after a checkpoint, as %s/STOP asked: --resume goes on from it", o->checkpoint);
        if (rc == 0) break;
        if (restart >= o->restarts || (program && !lost)) {
            if (o->restarts && program && !lost)
                note("the job failed with an error of its own (above), which a restart would meet again: no restart");
            else if (o->restarts)
                note("the job failed, and its %d restart%s are spent", o->restarts, o->restarts == 1 ? "" : "s");
            break;
        }
        restart++;
        /* the hosts still there take the job: those that answer */
        if (L.hosts.len) {
            reread_hostfile(&L);
            probe(&L);
            if (got_signal) break;
            for (size_t i = 0; i < L.hosts.len; i++)
                if (!L.up[i]) note("%s does not answer: left out", L.hosts.data[i].name);
        }
        int t = trainers_now(&L);
        if (!t) {
            int slots = 0;
            for (size_t i = 0; i < L.hosts.len; i++) slots += L.up[i] ? L.hosts.data[i].slots : 0;
            note("the hosts that answer have %d slots, the job needs %d: no restart", slots, least);
            break;
        }
        FlBuf h = {0}, from = {0};
        hosts_text(&L, t + o->pservers, &h);
        char *last = NULL;
        int64_t step = -1;
        if (o->checkpoint && fl_ckpt_latest(o->checkpoint, &last, &step, &e) == FL_OK && last)
            fl_buf_printf(&from, "from the checkpoint after step %lld ('%s')", (long long)step, last);
        else
            fl_buf_puts(&from, o->checkpoint ? "from the start (no checkpoint yet)" : "from the start (no --checkpoint)");
        note("restart %d of %d: %d ranks (%d trainer%s, %d pservers) on %s, %s", restart, o->restarts, t + o->pservers, t,
             t == 1 ? "" : "s", o->pservers, fl_buf_str(&h), fl_buf_str(&from));
        free(last);
        fl_buf_free(&h);
        fl_buf_free(&from);
    }
    if (got_signal) rc = 128 + got_signal;
    if (o->elastic_max) fl_ckpt_clear_stop(o->checkpoint);
done:
    free(L.self);
    free(L.plan);
    free(L.up);
    free(L.watch.pid);
    free(L.was_up);
    hosts_free(&L.hosts);
    return rc;
}
