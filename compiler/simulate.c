/* simulate.c: the calibration and cluster-spec parsers and the discrete-event model of a sync
 * plan's step (simulate.h; docs/simulate.md says what is modelled and what is not).
 *
 * How: the trainers' programs are walked once (their compute does not wait on the network until
 * the recv ops), which gives each send's time and the GETs' time; every message then becomes a
 * transfer request event. Events are handled in time order (a binary heap, ties by sequence
 * number), so a link, a FIFO resource, serves requests in the order they are made. Every timed
 * activity is a node with the node that made it ready (its predecessor); walking back from the
 * slowest trainer's end gives the critical path, whose spans add up to the step time exactly.
 *
 * Invariants: times are seconds from the step's start, all trainers starting at 0 with idle
 * links; payload bytes count tensors only (headers and GET requests are messages of no payload).
 */
#include "compiler/simulate.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/ir/rules.h"
#include "compiler/ops.h"

#define MAX_PIECES (1 << 20) /* pieces of one gradient: events and memory stay bounded */
#define HDR_BYTES 64.0 /* a message's header on the wire, for the time of GETs and headers */
#define EAGER_DEFAULT 65536 /* Open MPI's btl_tcp_eager_limit (4.1: ompi_info --param btl tcp --level 9) */
#define RECV_WINDOW 2 /* pieces of one gradient a pserver receives at once (runtime/mpi/pserver.c) */

/* ---- small parsers ---- */

static bool num(const char *s, double *out) {
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || errno || !isfinite(v)) return false;
    *out = v;
    return *end == 0;
}

/* The number at the head of s and its unit (the rest). */
static bool num_unit(const char *s, double *v, const char **unit) {
    char *end;
    errno = 0;
    *v = strtod(s, &end);
    if (end == s || errno || !isfinite(*v)) return false;
    *unit = end;
    return true;
}

FlStatus fl_sim_parse_rate(const char *s, double *out, FlErr *e) {
    static const struct { const char *u; double f; } units[] = {
        {"", 1},          {"B/s", 1},        {"KB/s", 1e3},      {"MB/s", 1e6},     {"GB/s", 1e9},
        {"bit", 1.0 / 8}, {"kbit", 1e3 / 8}, {"mbit", 1e6 / 8}, {"gbit", 1e9 / 8}, {"Kbit", 1e3 / 8},
        {"Mbit", 1e6 / 8}, {"Gbit", 1e9 / 8}};
    double v;
    const char *u;
    if (num_unit(s, &v, &u))
        for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
            if (!strcmp(u, units[i].u)) {
                double r = v * units[i].f;
                if (!(r >= FL_SIM_RATE_MIN && r <= FL_SIM_RATE_MAX))
                    return fl_err(e, "a bandwidth must be from 1kbit (%g bytes/s) to 10TB/s, found '%s'",
                                  FL_SIM_RATE_MIN, s);
                *out = r;
                return FL_OK;
            }
    return fl_err(e, "expected a bandwidth such as 1gbit, 200mbit, 10GB/s or 500MB/s, found '%s'", s);
}

FlStatus fl_sim_parse_time(const char *s, double *out, FlErr *e) {
    static const struct { const char *u; double f; } units[] = {{"s", 1}, {"ms", 1e-3}, {"us", 1e-6}, {"ns", 1e-9}};
    double v;
    const char *u;
    if (num_unit(s, &v, &u))
        for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
            if (!strcmp(u, units[i].u)) {
                double t = v * units[i].f;
                if (!(t >= 0 && t <= FL_SIM_TIME_MAX))
                    return fl_err(e, "a time must be from 0 to %gs (a link's latency, a message's cost, a wait), "
                                  "found '%s'", FL_SIM_TIME_MAX, s);
                *out = t;
                return FL_OK;
            }
    return fl_err(e, "expected a time such as 0.5ms, 20us or 1s, found '%s'", s);
}

static bool whole(const char *s, int64_t lo, int64_t hi, int64_t *out) {
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (end == s || *end || errno || v < lo || v > hi) return false;
    *out = v;
    return true;
}

FlStatus fl_sim_parse_range(const char *s, FlSimInts *out, FlErr *e) {
    out->len = 0;
    const char *p = s;
    while (*p) {
        const char *q = p;
        while (*q && *q != ',') q++;
        char item[64];
        size_t n = (size_t)(q - p);
        if (n == 0 || n >= sizeof item) return fl_err(e, "expected a number, a range A..B or a list, found '%s'", s);
        memcpy(item, p, n);
        item[n] = 0;
        char *dots = strstr(item, "..");
        int64_t a, b;
        if (dots) {
            *dots = 0;
            if (!whole(item, 1, 4096, &a) || !whole(dots + 2, 1, 4096, &b) || b < a)
                return fl_err(e, "expected a range A..B of whole numbers 1 <= A <= B <= 4096, found '%s'", s);
        } else if (!whole(item, 1, 4096, &a)) {
            return fl_err(e, "expected whole numbers from 1 to 4096, found '%s'", s);
        } else {
            b = a;
        }
        if (b - a > 64) return fl_err(e, "'%s': at most 65 values in a range", s);
        for (int64_t v = a; v <= b; v++) FL_VEC_PUSH(out, v);
        p = *q ? q + 1 : q;
        if (*q && !*p) return fl_err(e, "'%s' ends with ','", s);
    }
    if (!out->len) return fl_err(e, "expected a number, a range A..B or a list, found nothing");
    return FL_OK;
}

/* Splits text into lines (at '\n' and ';', both counted as line breaks) of tokens; calls fn
 * for each non-empty line with its number. '#' starts a comment, which ends at a newline. */
#define MAX_TOK 32
typedef FlStatus (*LineFn)(void *ctx, int line, char **tok, int ntok, const char *where, FlErr *e);

static FlStatus each_line(const char *text, const char *where, LineFn fn, void *ctx, FlErr *e) {
    int line = 1;
    const char *p = text;
    while (*p) {
        const char *q = p, *hash = NULL;
        while (*q && *q != '\n' && (*q != ';' || hash)) {
            if (*q == '#' && !hash) hash = q; /* a comment runs to the end of the line, ';' and all */
            q++;
        }
        char *buf = fl_xstrndup(p, (size_t)((hash ? hash : q) - p));
        char *tok[MAX_TOK];
        int ntok = 0;
        for (char *s = strtok(buf, " \t\r"); s; s = strtok(NULL, " \t\r")) {
            if (ntok == MAX_TOK) {
                free(buf);
                return fl_err(e, "%s:%d: more than %d words on a line", where, line, MAX_TOK);
            }
            tok[ntok++] = s;
        }
        FlStatus st = ntok ? fn(ctx, line, tok, ntok, where, e) : FL_OK;
        free(buf);
        if (st != FL_OK) return st;
        line++;
        p = *q ? q + 1 : q;
    }
    return FL_OK;
}

/* ---- calibration ---- */

/* A calibration's GFLOP/s or GB/s: from FL_SIM_CALIB_RATE_MIN to FL_SIM_CALIB_RATE_MAX. */
static bool calib_rate_ok(double v) { return v >= FL_SIM_CALIB_RATE_MIN && v <= FL_SIM_CALIB_RATE_MAX; }

typedef struct CalibCtx {
    FlSimCalib *c;
    int seen[4]; /* lines of elementwise, optimizer, memcpy, op_overhead */
} CalibCtx;

static FlStatus calib_line(void *ctx, int line, char **tok, int ntok, const char *where, FlErr *e) {
    CalibCtx *cc = ctx;
    FlSimCalib *c = cc->c;
    if (!strcmp(tok[0], "gemm")) {
        FlSimGemm g;
        long long m, n, k;
        char tail;
        if (ntok != 4 || sscanf(tok[1], "%lldx%lldx%lld%c", &m, &n, &k, &tail) != 3 || m < 1 || n < 1 || k < 1)
            return fl_err(e, "%s:%d: expected 'gemm MxNxK VALUE GFLOP/s'", where, line);
        if (!num(tok[2], &g.gflops) || !calib_rate_ok(g.gflops) || strcmp(tok[3], "GFLOP/s") != 0)
            return fl_err(e, "%s:%d: expected 'gemm MxNxK VALUE GFLOP/s' with VALUE from %g to %.0f, found '%s %s'",
                          where, line, FL_SIM_CALIB_RATE_MIN, FL_SIM_CALIB_RATE_MAX, tok[2], ntok > 3 ? tok[3] : "");
        g.m = m, g.n = n, g.k = k;
        FL_VEC_PUSH(&c->gemm, g);
        return FL_OK;
    }
    if (!strcmp(tok[0], "optimizer") && ntok == 4) { /* optimizer OP VALUE GB/s: that op's own rate */
        const FlOpInfo *info = fl_ops_find(tok[1]);
        if (!info || info->is_grad || !(info->flags & FL_OPF_OPTIMIZE))
            return fl_err(e, "%s:%d: '%s' is not an optimizer op (expected 'optimizer [OP] VALUE GB/s', OP one of "
                          "sgd, momentum, adam, ...: docs/ops.md)", where, line, tok[1]);
        FlSimOptRate r = {.op = (int)info->id, .line = line};
        for (size_t i = 0; i < c->optimizers.len; i++)
            if (c->optimizers.data[i].op == r.op)
                return fl_err(e, "%s:%d: 'optimizer %s' is given twice (first on line %d)", where, line, tok[1],
                              c->optimizers.data[i].line);
        if (!num(tok[2], &r.gbps) || !calib_rate_ok(r.gbps) || strcmp(tok[3], "GB/s") != 0)
            return fl_err(e, "%s:%d: expected 'optimizer %s VALUE GB/s' with VALUE from %g to %.0f", where, line,
                          tok[1], FL_SIM_CALIB_RATE_MIN, FL_SIM_CALIB_RATE_MAX);
        FL_VEC_PUSH(&c->optimizers, r);
        return FL_OK;
    }
    static const char *keys[4] = {"elementwise", "optimizer", "memcpy", "op_overhead"};
    static const char *units[4] = {"GB/s", "GB/s", "GB/s", "us"};
    double *dst[4] = {&c->elementwise_gbps, &c->optimizer_gbps, &c->memcpy_gbps, &c->op_overhead_us};
    for (int i = 0; i < 4; i++) {
        if (strcmp(tok[0], keys[i]) != 0) continue;
        if (cc->seen[i]) return fl_err(e, "%s:%d: '%s' is given twice (first on line %d)", where, line, keys[i], cc->seen[i]);
        double v;
        bool rate = i < 3; /* the GB/s figures; op_overhead is a time, 0 allowed */
        if (ntok != 3 || !num(tok[1], &v) || strcmp(tok[2], units[i]) != 0 ||
            (rate ? !calib_rate_ok(v) : !(v >= 0 && v <= FL_SIM_CALIB_US_MAX)))
            return rate ? fl_err(e, "%s:%d: expected '%s VALUE %s' with VALUE from %g to %.0f", where, line, keys[i],
                                 units[i], FL_SIM_CALIB_RATE_MIN, FL_SIM_CALIB_RATE_MAX)
                        : fl_err(e, "%s:%d: expected '%s VALUE %s' with VALUE from 0 to %.0f", where, line, keys[i],
                                 units[i], FL_SIM_CALIB_US_MAX);
        *dst[i] = v;
        cc->seen[i] = line;
        return FL_OK;
    }
    static const char *opt[2] = {"wakeup", "pollwait"};
    double *odst[2] = {&c->wakeup_us, &c->pollwait_us};
    for (int i = 0; i < 2; i++) {
        if (strcmp(tok[0], opt[i]) != 0) continue;
        if (*odst[i] >= 0) return fl_err(e, "%s:%d: '%s' is given twice", where, line, opt[i]);
        double v;
        if (ntok != 3 || !num(tok[1], &v) || strcmp(tok[2], "us") != 0 || !(v >= 0 && v <= FL_SIM_CALIB_US_MAX))
            return fl_err(e, "%s:%d: expected '%s VALUE us' with VALUE from 0 to %.0f", where, line, opt[i],
                          FL_SIM_CALIB_US_MAX);
        *odst[i] = v;
        return FL_OK;
    }
    return fl_err(e, "%s:%d: unknown key '%s' (expected gemm, elementwise, optimizer, memcpy, op_overhead, wakeup or "
                  "pollwait)", where, line, tok[0]);
}

FlStatus fl_sim_calib_parse(const char *text, const char *where, FlSimCalib *c, FlErr *e) {
    *c = (FlSimCalib){.wakeup_us = -1, .pollwait_us = -1};
    CalibCtx cc = {.c = c};
    if (each_line(text, where, calib_line, &cc, e) != FL_OK) goto fail;
    static const char *keys[4] = {"elementwise", "optimizer", "memcpy", "op_overhead"};
    for (int i = 0; i < 4; i++)
        if (!cc.seen[i]) {
            fl_err(e, "%s: no '%s' line", where, keys[i]);
            goto fail;
        }
    if (!c->gemm.len) {
        fl_err(e, "%s: no 'gemm' line", where);
        goto fail;
    }
    return FL_OK;
fail:
    fl_sim_calib_fini(c);
    return FL_ERROR;
}

FlStatus fl_sim_calib_load(const char *path, FlSimCalib *c, FlErr *e) {
    size_t len;
    char *text = fl_read_file(path, &len, e);
    if (!text) return FL_ERROR;
    FlStatus st = strlen(text) != len ? fl_err(e, "%s: a NUL byte; a calibration is text", path)
                                      : fl_sim_calib_parse(text, path, c, e);
    free(text);
    return st;
}

void fl_sim_calib_fini(FlSimCalib *c) {
    FL_VEC_FREE(&c->gemm);
    FL_VEC_FREE(&c->optimizers);
}

/* GB/s of an optimizer op: its own line's, else the calibration's `optimizer` rate */
static double optimizer_rate(const FlSimCalib *c, int op) {
    for (size_t i = 0; i < c->optimizers.len; i++)
        if (c->optimizers.data[i].op == op) return c->optimizers.data[i].gbps;
    return c->optimizer_gbps;
}

/* ---- cluster ---- */

static FlStatus host_roles(FlSimHost *h, const char *v, const char *where, int line, FlErr *e) {
    char *buf = fl_xstrdup(v);
    FlStatus st = FL_OK;
    for (char *s = strtok(buf, ","); s && st == FL_OK; s = strtok(NULL, ",")) {
        int64_t i;
        if (!strcmp(s, "trainers")) h->trainers = true;
        else if (!strcmp(s, "pservers")) h->pservers = true;
        else if (s[0] == 't' && whole(s + 1, 0, 4095, &i)) FL_VEC_PUSH(&h->t_idx, i);
        else if (s[0] == 'p' && whole(s + 1, 0, 4095, &i)) FL_VEC_PUSH(&h->p_idx, i);
        else st = fl_err(e, "%s:%d: roles: expected a list of trainers, pservers, tN (trainer N) or pN (pserver N), found '%s'",
                         where, line, s);
    }
    free(buf);
    return st;
}

/* `machine cores=N hosts=A,B [switch=yes|no] [wakeup=TIME] [pollwait=TIME]`: the hosts are one
 * machine's (network namespaces of tests/cluster/cluster.sh), sharing its cores. The hosts are
 * resolved once the whole spec is read (resolve_machines). */
static FlStatus machine_line(FlSimCluster *c, int line, char **tok, int ntok, const char *where, FlErr *e) {
    FlSimMachine m = {.wakeup = -1, .pollwait = -1, .line = line};
    FlErr inner;
    FlStatus st = FL_OK;
    for (int i = 1; i < ntok && st == FL_OK; i++) {
        char *eq = strchr(tok[i], '=');
        if (!eq) {
            st = fl_err(e, "%s:%d: expected key=value, found '%s'", where, line, tok[i]);
            break;
        }
        *eq = 0;
        const char *k = tok[i], *v = eq + 1;
        FlStatus kst = FL_OK;
        if (!strcmp(k, "cores")) {
            if (!whole(v, 1, 1 << 20, &m.cores)) kst = fl_err(&inner, "expected a whole number >= 1, found '%s'", v);
        } else if (!strcmp(k, "hosts")) {
            if (!*v || strstr(v, ",,") || v[0] == ',' || v[strlen(v) - 1] == ',')
                kst = fl_err(&inner, "expected a list of host names, found '%s'", v);
            else {
                free(m.host_list);
                m.host_list = fl_xstrdup(v);
            }
        } else if (!strcmp(k, "switch")) {
            if (!strcmp(v, "yes")) m.userswitch = true;
            else if (!strcmp(v, "no")) m.userswitch = false;
            else kst = fl_err(&inner, "expected yes (the hosts' links go through a switch thread on the machine) or no, found '%s'", v);
        } else if (!strcmp(k, "bind")) {
            if (!strcmp(v, "core")) m.bind = true;
            else if (!strcmp(v, "none")) m.bind = false;
            else kst = fl_err(&inner, "expected core (its ranks bound to its cores in turn, in rank order) or none, found '%s'", v);
        } else if (!strcmp(k, "switchrate")) {
            kst = fl_sim_parse_rate(v, &m.switchrate, &inner);
        } else if (!strcmp(k, "wakeup")) {
            kst = fl_sim_parse_time(v, &m.wakeup, &inner);
        } else if (!strcmp(k, "pollwait")) {
            kst = fl_sim_parse_time(v, &m.pollwait, &inner);
        } else {
            st = fl_err(e, "%s:%d: unknown key '%s' (expected cores, hosts, bind, switch, switchrate, wakeup or pollwait)", where, line, k);
            break;
        }
        if (kst != FL_OK) st = fl_err(e, "%s:%d: %s: %s", where, line, k, inner.msg);
    }
    if (st == FL_OK && (!m.cores || !m.host_list))
        st = fl_err(e, "%s:%d: 'machine' needs cores=N and hosts=LIST", where, line);
    if (st == FL_OK && m.switchrate > 0 && !m.userswitch)
        st = fl_err(e, "%s:%d: switchrate= is the switch thread's; it needs switch=yes", where, line);
    if (st != FL_OK) {
        free(m.host_list);
        return FL_ERROR;
    }
    FL_VEC_PUSH(&c->machines, m);
    return FL_OK;
}

/* Each machine's hosts= names hosts of the spec, each on one machine at most, none with its own
 * cores=. */
static FlStatus resolve_machines(FlSimCluster *c, const char *where, FlErr *e) {
    for (size_t mi = 0; mi < c->machines.len; mi++) {
        FlSimMachine *m = &c->machines.data[mi];
        char *buf = fl_xstrdup(m->host_list);
        FlStatus st = FL_OK;
        for (char *s = strtok(buf, ","); s && st == FL_OK; s = strtok(NULL, ",")) {
            FlSimHost *h = NULL;
            for (size_t i = 0; i < c->hosts.len; i++)
                if (!strcmp(c->hosts.data[i].name, s)) h = &c->hosts.data[i];
            if (!h) st = fl_err(e, "%s:%d: hosts: no host '%s' in the spec", where, m->line, s);
            else if (h->machine >= 0)
                st = fl_err(e, "%s:%d: hosts: host '%s' is already on the machine of line %d", where, m->line, s,
                            c->machines.data[h->machine].line);
            else if (h->cores)
                st = fl_err(e, "%s:%d: host '%s' has cores= and is on the machine of line %d, whose cores it shares",
                            where, h->line, s, m->line);
            else h->machine = (int)mi;
        }
        free(buf);
        if (st != FL_OK) return FL_ERROR;
    }
    return FL_OK;
}

static FlStatus cluster_line(void *ctx, int line, char **tok, int ntok, const char *where, FlErr *e) {
    FlSimCluster *c = ctx;
    FlErr inner;
    if (!strcmp(tok[0], "local")) {
        if (c->local_line) return fl_err(e, "%s:%d: a second 'local' line (the first is line %d)", where, line, c->local_line);
        bool bw = false, lat = false;
        for (int i = 1; i < ntok; i++) {
            char *eq = strchr(tok[i], '=');
            if (eq && !strncmp(tok[i], "bandwidth=", 10)) {
                if (fl_sim_parse_rate(eq + 1, &c->local_bandwidth, &inner) != FL_OK)
                    return fl_err(e, "%s:%d: bandwidth: %s", where, line, inner.msg);
                bw = true;
            } else if (eq && !strncmp(tok[i], "latency=", 8)) {
                if (fl_sim_parse_time(eq + 1, &c->local_latency, &inner) != FL_OK)
                    return fl_err(e, "%s:%d: latency: %s", where, line, inner.msg);
                lat = true;
            } else {
                return fl_err(e, "%s:%d: 'local' takes bandwidth=RATE latency=TIME, found '%s'", where, line, tok[i]);
            }
        }
        if (!bw || !lat) return fl_err(e, "%s:%d: 'local' needs bandwidth=RATE and latency=TIME", where, line);
        c->local_line = line;
        return FL_OK;
    }
    if (!strcmp(tok[0], "links")) {
        if (c->links_line) return fl_err(e, "%s:%d: a second 'links' line (the first is line %d)", where, line, c->links_line);
        if (ntok != 2 || (strcmp(tok[1], "fifo") != 0 && strcmp(tok[1], "shared") != 0))
            return fl_err(e, "%s:%d: expected 'links fifo' (messages take a link one after the other) or 'links shared' "
                          "(the messages on a link at once share it)", where, line);
        c->links_shared = !strcmp(tok[1], "shared");
        c->links_line = line;
        return FL_OK;
    }
    if (!strcmp(tok[0], "machine")) return machine_line(c, line, tok, ntok, where, e);
    if (strcmp(tok[0], "host") != 0)
        return fl_err(e, "%s:%d: expected 'host NAME key=value...', 'local bandwidth=RATE latency=TIME', 'machine "
                      "cores=N hosts=LIST' or 'links fifo|shared', found '%s'", where, line, tok[0]);
    if (ntok < 2 || strchr(tok[1], '=')) return fl_err(e, "%s:%d: 'host' needs a name", where, line);
    for (size_t i = 0; i < c->hosts.len; i++)
        if (!strcmp(c->hosts.data[i].name, tok[1]))
            return fl_err(e, "%s:%d: host '%s' is described twice (first on line %d)", where, line, tok[1],
                          c->hosts.data[i].line);
    FlSimHost h = {.name = fl_xstrdup(tok[1]), .compute = 1, .eager = EAGER_DEFAULT, .machine = -1, .line = line};
    FL_VEC_PUSH(&c->hosts, h);
    FlSimHost *hp = &c->hosts.data[c->hosts.len - 1];
    for (int i = 2; i < ntok; i++) {
        char *eq = strchr(tok[i], '=');
        if (!eq) return fl_err(e, "%s:%d: expected key=value, found '%s'", where, line, tok[i]);
        *eq = 0;
        const char *k = tok[i], *v = eq + 1;
        FlStatus st = FL_OK;
        if (!strcmp(k, "slots")) {
            if (!whole(v, 1, 1 << 20, &hp->slots)) st = fl_err(&inner, "expected a whole number >= 1, found '%s'", v);
        } else if (!strcmp(k, "cores")) {
            if (!whole(v, 1, 1 << 20, &hp->cores)) st = fl_err(&inner, "expected a whole number >= 1, found '%s'", v);
        } else if (!strcmp(k, "bandwidth")) {
            st = fl_sim_parse_rate(v, &hp->bandwidth, &inner);
        } else if (!strcmp(k, "latency")) {
            st = fl_sim_parse_time(v, &hp->latency, &inner);
        } else if (!strcmp(k, "msgcost")) {
            st = fl_sim_parse_time(v, &hp->msgcost, &inner);
        } else if (!strcmp(k, "eager")) {
            if (!whole(v, 0, INT64_MAX, &hp->eager))
                st = fl_err(&inner, "expected a whole number of bytes (Open MPI's btl_tcp_eager_limit, default %d), found '%s'",
                            EAGER_DEFAULT, v);
        } else if (!strcmp(k, "compute")) {
            if (!num(v, &hp->compute) || !(hp->compute >= FL_SIM_COMPUTE_MIN && hp->compute <= FL_SIM_COMPUTE_MAX))
                st = fl_err(&inner, "expected a factor from %g to %g (2: compute takes twice as long), found '%s'",
                            FL_SIM_COMPUTE_MIN, FL_SIM_COMPUTE_MAX, v);
        } else if (!strcmp(k, "roles")) {
            if (host_roles(hp, v, where, line, e) != FL_OK) return FL_ERROR;
        } else {
            return fl_err(e, "%s:%d: unknown key '%s' (expected slots, bandwidth, latency, msgcost, eager, compute, cores or roles)",
                          where, line, k);
        }
        if (st != FL_OK) return fl_err(e, "%s:%d: %s: %s", where, line, k, inner.msg);
    }
    return FL_OK;
}

FlStatus fl_sim_cluster_parse(const char *text, const char *where, FlSimCluster *c, FlErr *e) {
    *c = (FlSimCluster){.where = fl_xstrdup(where), .links_shared = true};
    if (each_line(text, where, cluster_line, c, e) != FL_OK) goto fail;
    if (resolve_machines(c, where, e) != FL_OK) goto fail;
    if (!c->hosts.len) {
        fl_err(e, "%s: no 'host' line", where);
        goto fail;
    }
    return FL_OK;
fail:
    fl_sim_cluster_fini(c);
    return FL_ERROR;
}

FlStatus fl_sim_cluster_load(const char *arg, FlSimCluster *c, FlErr *e) {
    FILE *f = fopen(arg, "rb");
    if (!f) {
        if (!strstr(arg, "host "))
            return fl_err(e, "--cluster '%s': no such file, and not an inline spec (which has 'host NAME ...')", arg);
        return fl_sim_cluster_parse(arg, "<cluster>", c, e);
    }
    fclose(f);
    size_t len;
    char *text = fl_read_file(arg, &len, e);
    if (!text) return FL_ERROR;
    FlStatus st = strlen(text) != len ? fl_err(e, "%s: a NUL byte; a cluster spec is text", arg)
                                      : fl_sim_cluster_parse(text, arg, c, e);
    free(text);
    return st;
}

void fl_sim_cluster_fini(FlSimCluster *c) {
    for (size_t i = 0; i < c->hosts.len; i++) {
        free(c->hosts.data[i].name);
        FL_VEC_FREE(&c->hosts.data[i].t_idx);
        FL_VEC_FREE(&c->hosts.data[i].p_idx);
    }
    FL_VEC_FREE(&c->hosts);
    for (size_t i = 0; i < c->machines.len; i++) free(c->machines.data[i].host_list);
    FL_VEC_FREE(&c->machines);
    free(c->where);
    c->where = NULL;
}

/* Places the trainers and pservers on hosts: an explicit tN / pN first, then the hosts taking
 * every trainer (pserver) in turn, then, for the ranks left, mpirun's placement by slot over
 * the hosts without roles in rank order (trainers are ranks 0..T-1), wrapping around
 * (oversubscribing) when the slots run out. */
static FlStatus place(const FlSimCluster *c, int64_t T, int64_t P, int *th, int *ph, FlErr *e) {
    size_t nh = c->hosts.len;
    for (int64_t i = 0; i < T + P; i++) {
        bool tr = i < T;
        int64_t idx = tr ? i : i - T;
        int *slot = tr ? &th[idx] : &ph[idx];
        *slot = -1;
        for (size_t h = 0; h < nh; h++) {
            const FlSimInts *l = tr ? &c->hosts.data[h].t_idx : &c->hosts.data[h].p_idx;
            for (size_t j = 0; j < l->len; j++)
                if (l->data[j] == idx) {
                    if (*slot >= 0)
                        return fl_err(e, "%s:%d: %s %lld is placed on host '%s' and on '%s'", c->where,
                                      c->hosts.data[h].line, tr ? "trainer" : "pserver", (long long)idx,
                                      c->hosts.data[*slot].name, c->hosts.data[h].name);
                    *slot = (int)h;
                }
        }
    }
    for (int pass = 0; pass < 2; pass++) {
        int64_t n = pass ? P : T, k = 0;
        int *out = pass ? ph : th;
        size_t cnt = 0;
        for (size_t h = 0; h < nh; h++) cnt += pass ? c->hosts.data[h].pservers : c->hosts.data[h].trainers;
        if (!cnt) continue;
        for (int64_t i = 0; i < n; i++) {
            if (out[i] >= 0) continue;
            size_t seen = 0;
            for (size_t h = 0; h < nh; h++)
                if (pass ? c->hosts.data[h].pservers : c->hosts.data[h].trainers) {
                    if (seen++ == (size_t)(k % (int64_t)cnt)) out[i] = (int)h;
                }
            k++;
        }
    }
    size_t free_hosts = 0;
    for (size_t h = 0; h < nh; h++) {
        const FlSimHost *x = &c->hosts.data[h];
        if (!x->trainers && !x->pservers && !x->t_idx.len && !x->p_idx.len) free_hosts++;
    }
    int64_t *used = fl_xcalloc(nh, sizeof *used);
    size_t cur = 0;
    for (int64_t i = 0; i < T + P; i++) {
        int *slot = i < T ? &th[i] : &ph[i - T];
        if (*slot >= 0) continue;
        if (!free_hosts) {
            free(used);
            return fl_err(e, "%s: %s %lld has no host: every host has roles=, and none lists it", c->where,
                          i < T ? "trainer" : "pserver", (long long)(i < T ? i : i - T));
        }
        /* the next host without roles whose slots are not all taken; when all are, wrap */
        for (size_t tries = 0; tries < 2 * nh; tries++) {
            const FlSimHost *x = &c->hosts.data[cur];
            bool roleless = !x->trainers && !x->pservers && !x->t_idx.len && !x->p_idx.len;
            bool full = x->slots > 0 && used[cur] >= x->slots;
            if (roleless && (!full || tries >= nh)) break;
            cur = (cur + 1) % nh;
        }
        *slot = (int)cur;
        used[cur]++;
        const FlSimHost *x = &c->hosts.data[cur];
        if (x->slots > 0 && used[cur] >= x->slots) {
            bool all_full = true;
            for (size_t h = 0; h < nh; h++) {
                const FlSimHost *y = &c->hosts.data[h];
                bool roleless = !y->trainers && !y->pservers && !y->t_idx.len && !y->p_idx.len;
                if (roleless && (y->slots == 0 || used[h] < y->slots)) all_full = false;
            }
            if (all_full) memset(used, 0, nh * sizeof *used), cur = (cur + 1) % nh; /* wrap */
            else cur = (cur + 1) % nh;
        }
    }
    free(used);
    return FL_OK;
}

/* ---- op costs ---- */

static double var_bytes(const FlProgram *p, const FlBlock *b, const char *name, int64_t batch) {
    if (!name || fl_rule_is_empty(name)) return 0;
    const FlVarDesc *v = fl_ir_var_lookup(p, b, name);
    if (!v || (v->kind != FL_VAR_DENSE && v->kind != FL_VAR_SELECTED_ROWS)) return 0;
    double n = 1;
    for (int i = 0; i < v->ndim; i++) n *= v->shape[i] < 0 ? (double)batch : (double)v->shape[i];
    return n * (double)fl_dtype_size(v->dtype);
}

static double dim_prod(const FlVarDesc *v, int from, int to, int64_t batch) {
    double n = 1;
    for (int i = from; i < to && i < v->ndim; i++) n *= v->shape[i] < 0 ? (double)batch : (double)v->shape[i];
    return n;
}

static double gemm_rate(const FlSimCalib *c, double m, double n, double k) {
    double best = INFINITY, rate = c->gemm.data[0].gflops;
    for (size_t i = 0; i < c->gemm.len; i++) {
        const FlSimGemm *g = &c->gemm.data[i];
        double d = fabs(log(m / (double)g->m)) + fabs(log(n / (double)g->n)) + fabs(log(k / (double)g->k));
        if (d < best) best = d, rate = g->gflops;
    }
    return rate * 1e9;
}

static double op_cost(const FlSimCalib *c, const FlProgram *p, const FlBlock *b, const FlOpDesc *op, int64_t batch);

static double block_cost(const FlSimCalib *c, const FlProgram *p, const FlBlock *b, int64_t batch) {
    double s = 0;
    for (size_t i = 0; i < b->ops.len; i++) s += op_cost(c, p, b, b->ops.data[i], batch);
    return s;
}

/* Seconds of one op: the fixed cost per op, plus a GEMM's FLOPs at the calibrated rate of the
 * nearest shape, or the bytes it reads and writes at the element-wise (optimizer) bandwidth.
 * Control ops run their blocks once. Dist ops cost their fixed cost here (the model times the
 * messages). */
static double op_cost(const FlSimCalib *c, const FlProgram *p, const FlBlock *b, const FlOpDesc *op, int64_t batch) {
    double t = c->op_overhead_us * 1e-6;
    const FlOpInfo *info = fl_ops_of(op);
    unsigned flags = info ? info->flags : 0;
    if (flags & FL_OPF_DIST) return t;
    if (info && (info->id == FL_OPID_mul || info->id == FL_OPID_matmul)) {
        const FlVarDesc *x = fl_ir_var_lookup(p, b, fl_ir_op_input1(op, "X") ? fl_ir_op_input1(op, "X") : "");
        const FlVarDesc *y = fl_ir_var_lookup(p, b, fl_ir_op_input1(op, "Y") ? fl_ir_op_input1(op, "Y") : "");
        if (x && y && x->ndim >= 1 && y->ndim >= 1) {
            double m, k, n;
            if (info->id == FL_OPID_mul) {
                int xn = (int)fl_ir_op_get_int(op, "x_num_col_dims", 1), yn = (int)fl_ir_op_get_int(op, "y_num_col_dims", 1);
                m = dim_prod(x, 0, xn, batch), k = dim_prod(x, xn, x->ndim, batch), n = dim_prod(y, yn, y->ndim, batch);
            } else {
                bool tx = fl_ir_op_get_bool(op, "transpose_X", false), ty = fl_ir_op_get_bool(op, "transpose_Y", false);
                double xr = x->ndim >= 2 ? dim_prod(x, x->ndim - 2, x->ndim - 1, batch) : 1;
                double xc = dim_prod(x, x->ndim - 1, x->ndim, batch);
                double yr = y->ndim >= 2 ? dim_prod(y, y->ndim - 2, y->ndim - 1, batch) : dim_prod(y, 0, 1, batch);
                double yc = y->ndim >= 2 ? dim_prod(y, y->ndim - 1, y->ndim, batch) : 1;
                m = (tx ? xc : xr) * (x->ndim > 2 ? dim_prod(x, 0, x->ndim - 2, batch) : 1);
                k = tx ? xr : xc;
                n = ty ? yr : yc;
            }
            int gemms = 1;
            if (info->is_grad) {
                gemms = 0;
                const FlSlot *dx = fl_ir_op_output(op, "X@GRAD"), *dy = fl_ir_op_output(op, "Y@GRAD");
                gemms += dx && dx->nargs && !fl_rule_is_empty(dx->args[0]);
                gemms += dy && dy->nargs && !fl_rule_is_empty(dy->args[0]);
            }
            if (m > 0 && n > 0 && k > 0) return t + gemms * 2.0 * m * n * k / gemm_rate(c, m, n, k);
        }
    }
    double bytes = 0;
    for (size_t i = 0; i < op->ins.len; i++)
        for (size_t j = 0; j < op->ins.data[i].nargs; j++) bytes += var_bytes(p, b, op->ins.data[i].args[j], batch);
    for (size_t i = 0; i < op->outs.len; i++)
        for (size_t j = 0; j < op->outs.data[i].nargs; j++) bytes += var_bytes(p, b, op->outs.data[i].args[j], batch);
    /* copies and streaming sums (a trainer's split of a gradient into blocks and concat of a
     * parameter's, a pserver's sum of the trainers' gradients and its 1/T scale) move their bytes
     * as memcpy does, which reads and writes one byte for each byte it copies; the calibration's
     * element-wise rate is that of relu, scale, add and softmax together, softmax's exp the
     * slowest of them */
    bool streams = info && (info->id == FL_OPID_split || info->id == FL_OPID_concat || info->id == FL_OPID_sum ||
                            info->id == FL_OPID_scale || info->id == FL_OPID_assign);
    t += bytes / (streams ? 2 * c->memcpy_gbps * 1e9
                          : ((flags & FL_OPF_OPTIMIZE) ? optimizer_rate(c, (int)info->id) : c->elementwise_gbps) * 1e9);
    for (size_t i = 0; i < op->attrs.len; i++) {
        const FlAttr *a = &op->attrs.data[i];
        if (a->type == FL_ATTR_BLOCK && a->i > 0 && (size_t)a->i < p->blocks.len)
            t += block_cost(c, p, p->blocks.data[a->i], batch);
        if (a->type == FL_ATTR_BLOCKS)
            for (size_t j = 0; j < a->n; j++)
                if (a->ints[j] > 0 && (size_t)a->ints[j] < p->blocks.len) t += block_cost(c, p, p->blocks.data[a->ints[j]], batch);
    }
    return t;
}

/* ---- the event model ---- */

enum { CAT_COMPUTE, CAT_TRANSFER, CAT_UPDATE, CAT_WAIT };

typedef FL_VEC(double) Doubles;

typedef struct Node {
    double end;
    int cat, trainer; /* trainer -1: a pserver's or no one's */
    int pred;         /* -1: the step's start */
} Node;

typedef struct Res {
    double free;
    int last; /* node that last used it */
} Res;

typedef struct Ev {
    double t;
    uint64_t seq;
    int kind; /* EV_XFER, EV_ARRIVE, EV_DONE */
    int node; /* the node that made it ready */
    int src, dst; /* hosts */
    double bytes;
    int what; /* M_GRAD, M_GET, M_PARAM */
    int trainer, ps, blk, recv;
    int64_t piece;
    bool handled; /* a message to a pserver: its thread has taken it (the host's msgcost) */
    bool shaken;  /* above the sender's eager limit: its rendezvous is done, the data may flow */
    uint64_t ver; /* EV_FLOW: the flows' version it was scheduled for (stale when they changed) */
} Ev;

typedef struct Flow { /* a message between hosts on shared links (links shared) */
    Ev ev;
    double left;  /* bytes still to send */
    double rate;  /* bytes/s, its fair share */
    double lat;   /* after its last byte: the latencies, the switch's and the receiver's waits */
    int res[3];   /* the sender's way out, the receiver's way in, the switch thread (-1: none) */
} Flow;

typedef struct SBlk { /* a pserver's optimize block */
    int idx;
    char *grad, *param; /* borrowed from the plan */
    double bytes;       /* the gradient's bytes */
    double cost;        /* seconds of its ops for the whole block, fixed costs apart */
    double fixed;       /* their fixed costs */
    int64_t elements;
    int64_t pieces;
    int *arrived;      /* per piece: trainers whose piece is in */
    double *ready;     /* per piece: the last arrival */
    int *ready_node;
    double *done;      /* per piece: update done (-1 not yet) */
    int *done_node;
    FL_VEC(Ev) parked; /* rendezvous pieces whose receive is not posted yet (piece k - RECV_WINDOW not applied) */
} SBlk;

typedef struct Recv { /* one recv of a trainer */
    int ps, blk; /* blk -1: no block writes it (answered at once) */
    double bytes;
    int64_t pieces;
    double get_arrival; /* -1 until the GET is in */
    int get_node;
    int64_t sent;       /* pieces whose answer was sent */
} Recv;

enum { EV_XFER, EV_ARRIVE, EV_DONE, EV_FLOW };
enum { M_GRAD, M_GET, M_PARAM };

typedef struct Sim {
    const FlSimCalib *c;
    const FlSimCluster *cl;
    const FlSimOptions *o;
    FlSimResult *r;
    FL_VEC(Node) nodes;
    FL_VEC(Ev) heap;
    uint64_t seq;
    Res *out, *in, *loc;  /* per host */
    Res *sw;              /* per machine: its switch thread (switchrate=), both ways */
    Res *cpu;             /* per pserver */
    FL_VEC(SBlk) *blks;   /* per pserver */
    FL_VEC(Recv) *recvs;  /* per trainer */
    double *end;          /* per trainer: last answer piece in */
    int *end_node;
    int64_t *left;        /* per trainer: answer pieces still to come */
    double *lr_cost;      /* per pserver: its lr block, run before its first update */
    double *compute;      /* per trainer: its compute before the recvs' wait */
    double *tshare, *pshare; /* per host: its compute x the share of a core its trainers (pservers) get */
    double *wakeup, *pollwait; /* per machine, s */
    Doubles *calls;            /* per trainer: when it calls MPI before its recvs (each send op) */
    double *polls_from;        /* per trainer: from then on it waits in MPI, polling (its GETs) */
    FL_VEC(Flow) flows;        /* links shared: the messages on the links now */
    double flows_t;            /* when their bytes left were last brought up to date */
    uint64_t flows_ver;
    double *work_t, *work_p;   /* per trainer, pserver: the CPU its step takes (compute, updates,
                                  messages taken, shared-memory copies it receives), unshared */
} Sim;

static int node(Sim *s, double end, int cat, int trainer, int pred) {
    FL_VEC_PUSH(&s->nodes, ((Node){end, cat, trainer, pred}));
    return (int)s->nodes.len - 1;
}

static bool ev_less(const Ev *a, const Ev *b) { return a->t < b->t || (a->t == b->t && a->seq < b->seq); }

static void push(Sim *s, Ev ev) {
    ev.seq = s->seq++;
    FL_VEC_PUSH(&s->heap, ev);
    size_t i = s->heap.len - 1;
    while (i > 0) {
        size_t up = (i - 1) / 2;
        if (!ev_less(&s->heap.data[i], &s->heap.data[up])) break;
        Ev tmp = s->heap.data[i];
        s->heap.data[i] = s->heap.data[up];
        s->heap.data[up] = tmp;
        i = up;
    }
}

static Ev pop(Sim *s) {
    Ev top = s->heap.data[0];
    s->heap.data[0] = s->heap.data[--s->heap.len];
    size_t i = 0, n = s->heap.len;
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < n && ev_less(&s->heap.data[l], &s->heap.data[m])) m = l;
        if (r < n && ev_less(&s->heap.data[r], &s->heap.data[m])) m = r;
        if (m == i) break;
        Ev tmp = s->heap.data[i];
        s->heap.data[i] = s->heap.data[m];
        s->heap.data[m] = tmp;
        i = m;
    }
    return top;
}

/* The rank of host h, waiting as MPI ranks wait, sees a message at its next look: pollwait on a
 * machine's host. */
static double look(const Sim *s, int h) {
    int m = s->cl->hosts.data[h].machine;
    return m >= 0 ? s->pollwait[m] : 0;
}

/* The machine whose switch thread carries the frames from host a to host b (both its hosts,
 * switch=yes), or -1. */
static int switch_of(const Sim *s, int a, int b) {
    int m = s->cl->hosts.data[b].machine;
    return m >= 0 && a != b && s->cl->hosts.data[a].machine == m && s->cl->machines.data[m].userswitch ? m : -1;
}

/* Frames through a switch thread wait twice for it to wake (read, sent when due). */
static double switch_wait(const Sim *s, int a, int b) {
    int m = switch_of(s, a, b);
    return m >= 0 ? 2 * s->wakeup[m] : 0;
}

/* Open MPI's rendezvous (ob1 over the TCP BTL) for a message between hosts above the sender's
 * eager limit: it posts an RTS, which the receiver matches once it has posted the receive and
 * looks, answering with a CTS, which the sender sees at its next MPI call (a trainer before its
 * recvs: its next send op; waiting in MPI: its next look); only then the data takes the links.
 * The pieces of a burst were posted together and shake hands side by side; a pserver posts the
 * receive of a gradient's piece k once piece k - RECV_WINDOW is applied (its ring), so such a
 * piece waits here (parked) until then. Returns true when it took ev (rescheduled or parked). */
static bool rendezvous(Sim *s, Ev *ev) {
    const FlSimHost *a = &s->cl->hosts.data[ev->src], *b = &s->cl->hosts.data[ev->dst];
    if (ev->shaken || ev->src == ev->dst || ev->bytes <= (double)a->eager) return false;
    double lat = a->latency + b->latency;
    double match = ev->t + lat + switch_wait(s, ev->src, ev->dst) + look(s, ev->dst); /* the RTS seen */
    int pred = ev->node;
    if (ev->what == M_GRAD && ev->piece >= RECV_WINDOW) {
        SBlk *blk = &s->blks[ev->ps].data[ev->blk];
        int64_t k = ev->piece - RECV_WINDOW;
        if (blk->done[k] < 0) {
            FL_VEC_PUSH(&blk->parked, *ev);
            return true;
        }
        if (blk->done[k] > match) match = blk->done[k], pred = blk->done_node[k];
    }
    double cts = match + lat + switch_wait(s, ev->dst, ev->src), seen = cts + look(s, ev->src); /* the CTS in, seen */
    if (ev->what == M_GRAD && cts < s->polls_from[ev->trainer]) { /* the trainer computes: its next send op */
        seen = s->polls_from[ev->trainer];
        const Doubles *c = &s->calls[ev->trainer];
        for (size_t i = 0; i < c->len; i++)
            if (c->data[i] >= cts) {
                seen = c->data[i];
                break;
            }
    }
    ev->node = node(s, seen, CAT_TRANSFER, ev->trainer, pred);
    ev->t = seen;
    ev->shaken = true;
    push(s, *ev);
    return true;
}

/* ---- shared links (links shared): the messages on a link at once share its bandwidth, as TCP
 * connections do (max-min fair: each resource's capacity split evenly among its messages that
 * no other resource holds back). Resources: host h's way out (h), way in (H + h), machine m's
 * switch thread (2H + m). */

static double res_cap(const Sim *s, int r) {
    int nh = (int)s->cl->hosts.len;
    if (r < 2 * nh) return s->cl->hosts.data[r % nh].bandwidth;
    return s->cl->machines.data[r - 2 * nh].switchrate;
}

/* Each flow's fair share, by progressive filling. */
static void flows_share(Sim *s) {
    size_t n = s->flows.len, nr = 2 * s->cl->hosts.len + s->cl->machines.len;
    if (!n) return;
    double *cap = fl_xcalloc(nr, sizeof(double));
    int *users = fl_xcalloc(nr, sizeof(int));
    bool *fixed = fl_xcalloc(n, sizeof(bool));
    for (size_t r = 0; r < nr; r++) cap[r] = res_cap(s, (int)r);
    for (size_t left = n; left > 0;) {
        for (size_t r = 0; r < nr; r++) users[r] = 0;
        for (size_t i = 0; i < n; i++)
            for (int k = 0; k < 3 && !fixed[i]; k++)
                if (s->flows.data[i].res[k] >= 0) users[s->flows.data[i].res[k]]++;
        int tight = -1;
        double share = 0;
        for (size_t r = 0; r < nr; r++)
            if (users[r] && (tight < 0 || cap[r] / users[r] < share)) tight = (int)r, share = cap[r] / users[r];
        for (size_t i = 0; i < n; i++) {
            Flow *f = &s->flows.data[i];
            if (fixed[i] || (f->res[0] != tight && f->res[1] != tight && f->res[2] != tight)) continue;
            f->rate = share;
            fixed[i] = true;
            left--;
            for (int k = 0; k < 3; k++)
                if (f->res[k] >= 0) cap[f->res[k]] = fmax(cap[f->res[k]] - share, 0);
        }
    }
    free(cap), free(users), free(fixed);
}

/* When flow f ends at its rate, from the flows' last update: the one expression that both
 * schedules a flow's end (flows_next) and decides it (flows_advance), so the flow an EV_FLOW event
 * was scheduled for ends at that event, whatever the rounding of t + left / rate (at t = 1e6 s a
 * few bytes' time rounds away, and the flow would never end). */
static double flow_end(const Sim *s, const Flow *f) { return s->flows_t + f->left / f->rate; }

/* Brings the flows' bytes left up to time t; the flows done by then arrive (after their latency). */
static void flows_advance(Sim *s, double t) {
    double dt = t - s->flows_t;
    size_t keep = 0;
    for (size_t i = 0; i < s->flows.len; i++) {
        Flow f = s->flows.data[i];
        bool ended = !(flow_end(s, &f) > t); /* a NaN end too: it ends now */
        f.left -= f.rate * dt;
        if (ended || f.left <= 1e-6 * (f.ev.bytes > 0 ? f.ev.bytes : HDR_BYTES)) {
            Ev ev = f.ev;
            ev.node = node(s, t + f.lat, CAT_TRANSFER, ev.trainer, ev.node);
            ev.kind = EV_ARRIVE;
            ev.t = t + f.lat;
            push(s, ev);
        } else {
            s->flows.data[keep++] = f;
        }
    }
    s->flows.len = keep;
    s->flows_t = t;
}

/* Shares the links anew among the flows and schedules the next one's end. */
static void flows_next(Sim *s) {
    flows_share(s);
    double first = -1;
    for (size_t i = 0; i < s->flows.len; i++) {
        double end = flow_end(s, &s->flows.data[i]);
        if (!(end >= s->flows_t)) end = s->flows_t; /* NaN: now (flows_advance ends it) */
        if (first < 0 || end < first) first = end;
    }
    if (first >= 0) push(s, (Ev){.t = first, .kind = EV_FLOW, .ver = ++s->flows_ver});
}

static void flow_event(Sim *s, const Ev *ev) {
    if (ev->ver != s->flows_ver) return; /* the flows changed since: a later event stands */
    flows_advance(s, ev->t);
    flows_next(s);
}

/* Takes the link(s) for one message, FIFO: the sender's way out and the receiver's way in (or
 * the host's local channel), then the latencies; with shared links, a message between hosts
 * shares them with the others on them. Schedules its arrival. */
static void transfer(Sim *s, Ev ev) {
    if (rendezvous(s, &ev)) return;
    if (s->cl->links_shared && ev.src != ev.dst) {
        int m = switch_of(s, ev.src, ev.dst), nh = (int)s->cl->hosts.len;
        Flow f = {.ev = ev, .left = ev.bytes > 0 ? ev.bytes : HDR_BYTES,
                  .lat = s->cl->hosts.data[ev.src].latency + s->cl->hosts.data[ev.dst].latency +
                         switch_wait(s, ev.src, ev.dst) + look(s, ev.dst),
                  .res = {ev.src, nh + ev.dst, m >= 0 && s->cl->machines.data[m].switchrate > 0 ? 2 * nh + m : -1}};
        s->r->links[ev.src].out_bytes += ev.bytes;
        s->r->links[ev.dst].in_bytes += ev.bytes;
        s->r->messages++;
        flows_advance(s, ev.t);
        FL_VEC_PUSH(&s->flows, f);
        flows_next(s);
        return;
    }
    const FlSimHost *a = &s->cl->hosts.data[ev.src], *b = &s->cl->hosts.data[ev.dst];
    double wire = ev.bytes > 0 ? ev.bytes : HDR_BYTES;
    double start = ev.t, dur, lat;
    int pred = ev.node;
    Res *r1, *r2;
    if (ev.src == ev.dst) {
        r1 = r2 = &s->loc[ev.src];
        dur = wire / s->cl->local_bandwidth;
        lat = s->cl->local_latency;
        s->r->links[ev.src].local_bytes += ev.bytes;
        /* Open MPI's shared memory (vader, single copy by CMA): the receiver copies */
        if (ev.what == M_PARAM) s->work_t[ev.trainer] += dur;
        else s->work_p[ev.ps] += dur;
    } else {
        r1 = &s->out[ev.src];
        r2 = &s->in[ev.dst];
        dur = wire / fmin(a->bandwidth, b->bandwidth);
        lat = a->latency + b->latency;
        s->r->links[ev.src].out_bytes += ev.bytes;
        s->r->links[ev.dst].in_bytes += ev.bytes;
    }
    lat += switch_wait(s, ev.src, ev.dst) + look(s, ev.dst);
    /* a switch thread with a rate forwards the frames of all its machine's links, both ways, one
     * at a time: a third FIFO resource, held at its own rate */
    int m = switch_of(s, ev.src, ev.dst);
    Res *r3 = m >= 0 && s->cl->machines.data[m].switchrate > 0 ? &s->sw[m] : r2;
    double dur3 = r3 != r2 ? wire / s->cl->machines.data[m].switchrate : dur;
    if (r1->free > start) start = r1->free, pred = r1->last;
    if (r2->free > start) start = r2->free, pred = r2->last;
    if (r3->free > start) start = r3->free, pred = r3->last;
    dur = fmax(dur, dur3);
    int n = node(s, start + dur + lat, CAT_TRANSFER, ev.trainer, pred); /* the trainer whose message it is */
    r1->free = r2->free = start + dur;
    r3->free = start + dur3;
    r1->last = r2->last = r3->last = n;
    s->r->messages++;
    ev.kind = EV_ARRIVE;
    ev.t = start + dur + lat;
    ev.node = n;
    push(s, ev);
}

/* Sends the answer pieces of recv ri of trainer t that are ready (its GET in, the pieces
 * updated). */
static void answer(Sim *s, int t, int ri, double now) {
    Recv *rv = &s->recvs[t].data[ri];
    if (rv->get_arrival < 0) return;
    SBlk *b = rv->blk >= 0 ? &s->blks[rv->ps].data[rv->blk] : NULL;
    while (rv->sent < rv->pieces) {
        int64_t k = rv->sent;
        double ready = rv->get_arrival;
        int pred = rv->get_node;
        if (b) {
            int64_t bk = k < b->pieces ? k : b->pieces - 1;
            if (b->done[bk] < 0) return;
            if (b->done[bk] > ready) ready = b->done[bk], pred = b->done_node[bk];
        }
        double bytes = rv->bytes / (double)rv->pieces;
        push(s, (Ev){.t = ready > now ? ready : now, .kind = EV_XFER, .node = pred,
                     .src = s->r->pserver_host[rv->ps], .dst = s->r->trainer_host[t], .bytes = bytes,
                     .what = M_PARAM, .trainer = t, .ps = rv->ps, .blk = rv->blk, .recv = ri, .piece = k});
        rv->sent++;
    }
}

static void arrive(Sim *s, const Ev *ev) {
    double cost = ev->what != M_PARAM ? s->cl->hosts.data[s->r->pserver_host[ev->ps]].msgcost : 0;
    if (cost > 0 && !ev->handled) { /* the pserver's one thread takes each message in turn */
        Res *cpu = &s->cpu[ev->ps];
        double start = ev->t;
        int pred = ev->node;
        if (cpu->free > start) start = cpu->free, pred = cpu->last;
        s->work_p[ev->ps] += cost;
        int n = node(s, start + cost, CAT_TRANSFER, ev->trainer, pred);
        cpu->free = start + cost;
        cpu->last = n;
        Ev next = *ev;
        next.t = start + cost, next.node = n, next.handled = true;
        push(s, next);
        return;
    }
    if (ev->what == M_GRAD) {
        SBlk *b = &s->blks[ev->ps].data[ev->blk];
        int64_t k = ev->piece;
        if (ev->t > b->ready[k] || b->arrived[k] == 0) b->ready[k] = ev->t, b->ready_node[k] = ev->node;
        if (++b->arrived[k] < (int)s->r->T) return;
        /* every trainer's piece k is in: the pserver updates it when its thread is free */
        Res *cpu = &s->cpu[ev->ps];
        double start = b->ready[k];
        int pred = b->ready_node[k];
        if (cpu->free > start) start = cpu->free, pred = cpu->last;
        int h = s->r->pserver_host[ev->ps];
        double own = b->cost / (double)b->pieces + (k == 0 ? b->fixed : 0) + s->lr_cost[ev->ps];
        double dur = own * s->pshare[h];
        s->work_p[ev->ps] += own * s->cl->hosts.data[h].compute;
        s->r->servers[ev->ps].update_s += dur;
        s->lr_cost[ev->ps] = 0;
        int n = node(s, start + dur, CAT_UPDATE, -1, pred);
        cpu->free = start + dur;
        cpu->last = n;
        push(s, (Ev){.t = start + dur, .kind = EV_DONE, .node = n, .ps = ev->ps, .blk = ev->blk, .piece = k});
    } else if (ev->what == M_GET) {
        Recv *rv = &s->recvs[ev->trainer].data[ev->recv];
        rv->get_arrival = ev->t;
        rv->get_node = ev->node;
        answer(s, ev->trainer, ev->recv, ev->t);
    } else {
        int t = ev->trainer;
        if (ev->t >= s->end[t]) s->end[t] = ev->t, s->end_node[t] = ev->node;
        s->left[t]--;
    }
}

static void done(Sim *s, const Ev *ev) {
    SBlk *b = &s->blks[ev->ps].data[ev->blk];
    b->done[ev->piece] = ev->t;
    b->done_node[ev->piece] = ev->node;
    size_t keep = 0; /* the pieces whose receive the pserver posts now (rendezvous) */
    for (size_t i = 0; i < b->parked.len; i++)
        if (b->parked.data[i].piece == ev->piece + RECV_WINDOW) push(s, b->parked.data[i]);
        else b->parked.data[keep++] = b->parked.data[i];
    b->parked.len = keep;
    for (int64_t t = 0; t < s->r->T; t++)
        for (size_t i = 0; i < s->recvs[t].len; i++)
            if (s->recvs[t].data[i].ps == ev->ps && s->recvs[t].data[i].blk == ev->blk) answer(s, (int)t, (int)i, ev->t);
}

static int64_t pieces_of(double bytes, int64_t piece) {
    if (bytes <= (double)piece) return 1;
    return (int64_t)ceil(bytes / (double)piece);
}

/* The pserver p's optimize blocks (from its listen_and_serv). */
static FlStatus read_server(Sim *s, const FlBundle *bd, int p, FlErr *e) {
    const FlProgram *prog = bd->main;
    const FlBlock *b0 = fl_ir_block(prog, 0);
    const FlOpDesc *ls = NULL;
    for (size_t i = 0; i < b0->ops.len; i++)
        if (fl_ops_is(b0->ops.data[i], FL_OPID_listen_and_serv)) ls = b0->ops.data[i];
    if (!ls) return fl_err(e, "pserver %d: its program has no listen_and_serv", p);
    const FlAttr *g2b = fl_ir_op_attr(ls, "grad_to_block");
    int64_t lr = fl_ir_op_get_int(ls, "lr_block", -1);
    if (lr > 0 && (size_t)lr < prog->blocks.len) s->lr_cost[p] = block_cost(s->c, prog, prog->blocks.data[lr], 1);
    for (size_t i = 0; g2b && i < g2b->n; i++) {
        const char *colon = strrchr(g2b->strs[i], ':');
        int64_t bi;
        if (!colon || !whole(colon + 1, 1, INT32_MAX, &bi) || (size_t)bi >= prog->blocks.len)
            return fl_err(e, "pserver %d: grad_to_block entry '%s' is not NAME:BLOCK", p, g2b->strs[i]);
        const FlBlock *blk = prog->blocks.data[bi];
        SBlk sb = {.idx = (int)bi, .grad = g2b->strs[i]};
        /* the block's gradient and parameter: the grad's own var, the optimizer's ParamOut */
        sb.grad = fl_xstrndup(g2b->strs[i], (size_t)(colon - g2b->strs[i]));
        sb.bytes = var_bytes(prog, blk, sb.grad, 1);
        for (size_t j = 0; j < blk->ops.len; j++) {
            const FlOpDesc *op = blk->ops.data[j];
            sb.fixed += s->c->op_overhead_us * 1e-6;
            sb.cost += op_cost(s->c, prog, blk, op, 1) - s->c->op_overhead_us * 1e-6;
            if (fl_ops_flags(op) & FL_OPF_OPTIMIZE) {
                const char *po = fl_ir_op_output1(op, "ParamOut");
                if (po) sb.param = (char *)po;
            }
        }
        const FlVarDesc *gv = fl_ir_var_lookup(prog, blk, sb.grad);
        if (gv) {
            int64_t n = 1;
            for (int d = 0; d < gv->ndim; d++) n *= gv->shape[d] < 0 ? 1 : gv->shape[d];
            sb.elements = n;
        }
        sb.pieces = pieces_of(sb.bytes, s->o->piece);
        if (sb.pieces > MAX_PIECES) {
            free(sb.grad);
            return fl_err(e, "pserver %d: '%s' would travel in %lld pieces of %lld bytes; the model takes at most %d "
                          "per gradient (a larger piece)", p, g2b->strs[i], (long long)sb.pieces, (long long)s->o->piece,
                          MAX_PIECES);
        }
        sb.arrived = fl_xcalloc((size_t)sb.pieces, sizeof(int));
        sb.ready = fl_xcalloc((size_t)sb.pieces, sizeof(double));
        sb.ready_node = fl_xcalloc((size_t)sb.pieces, sizeof(int));
        sb.done = fl_xcalloc((size_t)sb.pieces, sizeof(double));
        sb.done_node = fl_xcalloc((size_t)sb.pieces, sizeof(int));
        for (int64_t k = 0; k < sb.pieces; k++) sb.done[k] = -1;
        FL_VEC_PUSH(&s->blks[p], sb);
        s->r->servers[p].blocks++;
        s->r->servers[p].elements += sb.elements;
    }
    return FL_OK;
}

static int find_blk(Sim *s, int p, const char *name, bool grad) {
    for (size_t i = 0; i < s->blks[p].len; i++) {
        const SBlk *b = &s->blks[p].data[i];
        const char *n = grad ? b->grad : b->param;
        if (n && !strcmp(n, name)) return (int)i;
    }
    if (grad) { /* a trainer's "W@GRAD" to a pserver holding "W@GRAD.blockK" whole, or back */
        size_t len = fl_rule_block_base_len(name, NULL);
        for (size_t i = 0; len && i < s->blks[p].len; i++)
            if (strlen(s->blks[p].data[i].grad) == len && !strncmp(s->blks[p].data[i].grad, name, len)) return (int)i;
    }
    return -1;
}

static int64_t epmap_at(const FlOpDesc *op, size_t i) {
    const FlAttr *a = fl_ir_op_attr(op, "epmap");
    if (!a || !a->n) return 0;
    return i < a->n ? a->ints[i] : a->ints[a->n - 1];
}

/* Walks trainer t's main block: compute until each send (posting its gradient's pieces), the
 * GETs of the recv run, the compute after it. */
static FlStatus walk_trainer(Sim *s, const FlBundle *bd, int t, double *after, FlErr *e) {
    const FlProgram *prog = bd->main;
    const FlBlock *b0 = fl_ir_block(prog, 0);
    double factor = s->tshare[s->r->trainer_host[t]], speed = s->cl->hosts.data[s->r->trainer_host[t]].compute;
    int64_t batch = s->o->batch;
    /* the feeds: the vars of block 0 read before any op writes them, not persistable */
    double clock = 0;
    FlMap written;
    fl_map_init(&written);
    for (size_t i = 0; i < b0->ops.len; i++) {
        const FlOpDesc *op = b0->ops.data[i];
        for (size_t a = 0; a < op->ins.len; a++)
            for (size_t j = 0; j < op->ins.data[a].nargs; j++) {
                const char *n = op->ins.data[a].args[j];
                const FlVarDesc *v = fl_ir_var_find(b0, n);
                if (v && !v->persistable && !fl_map_find_str(&written, n) && v->kind == FL_VAR_DENSE) {
                    clock += var_bytes(prog, b0, n, batch) / (s->c->memcpy_gbps * 1e9);
                    fl_map_put_str(&written, n, (void *)n);
                }
            }
        for (size_t a = 0; a < op->outs.len; a++)
            for (size_t j = 0; j < op->outs.data[a].nargs; j++)
                fl_map_put_str(&written, op->outs.data[a].args[j], (void *)op->outs.data[a].args[j]);
    }
    fl_map_fini(&written);
    s->work_t[t] += clock * speed;
    clock *= factor;
    int prev = -1;
    bool in_recvs = false, gets_posted = false;
    double post_wait = 0;
    for (size_t i = 0; i < b0->ops.len; i++) {
        const FlOpDesc *op = b0->ops.data[i];
        bool is_recv = fl_ops_is(op, FL_OPID_recv), is_send = fl_ops_is(op, FL_OPID_send);
        if (in_recvs && !is_recv && !fl_ops_is(op, FL_OPID_fetch_barrier)) {
            if (is_send || fl_ops_is(op, FL_OPID_send_barrier))
                return fl_err(e, "trainer %d: a send after the recv ops; the model takes one round (sends, then recvs) per step", t);
        }
        if (is_recv && gets_posted && !in_recvs)
            return fl_err(e, "trainer %d: two runs of recv ops; the model takes one per step", t);
        double own = op_cost(s->c, prog, b0, op, batch), c = own * factor;
        s->work_t[t] += own * speed;
        if (gets_posted) {
            post_wait += c;
            continue;
        }
        clock += c;
        if (is_send) {
            FL_VEC_PUSH(&s->calls[t], clock); /* the send op posts its pieces and tests the pending sends */
            prev = node(s, clock, CAT_COMPUTE, t, prev);
            const FlSlot *x = fl_ir_op_input(op, "X");
            double copy = 0;
            for (size_t j = 0; x && j < x->nargs; j++) {
                int64_t ps = epmap_at(op, j);
                if (ps < 0 || ps >= s->r->P) return fl_err(e, "trainer %d: send '%s' to pserver %lld of %lld", t, x->args[j], (long long)ps, (long long)s->r->P);
                int blk = find_blk(s, (int)ps, x->args[j], true);
                if (blk < 0) return fl_err(e, "trainer %d: pserver %lld has no block for '%s'", t, (long long)ps, x->args[j]);
                double bytes = var_bytes(prog, b0, x->args[j], batch);
                const SBlk *sb = &s->blks[ps].data[blk];
                for (int64_t k = 0; k < sb->pieces; k++)
                    push(s, (Ev){.t = clock, .kind = EV_XFER, .node = prev, .src = s->r->trainer_host[t],
                                 .dst = s->r->pserver_host[ps], .bytes = bytes / (double)sb->pieces, .what = M_GRAD,
                                 .trainer = t, .ps = (int)ps, .blk = blk, .piece = k});
                /* to a pserver of its own host the gradient goes through shared memory, copied
                 * by the processes themselves: the trainer computes on only once its pieces are
                 * across (a send op's pending pieces are tested until they are; flrun --timeline
                 * shows the send ops taking that time) */
                if (s->r->trainer_host[t] == s->r->pserver_host[ps] && s->cl->local_bandwidth > 0)
                    copy += bytes / s->cl->local_bandwidth;
            }
            if (copy > 0) {
                clock += copy * factor;
                prev = node(s, clock, CAT_TRANSFER, t, prev);
            }
        } else if (is_recv) {
            in_recvs = true;
            const FlSlot *out = fl_ir_op_output(op, "Out");
            for (size_t j = 0; out && j < out->nargs; j++) {
                int64_t ps = epmap_at(op, j);
                if (ps < 0 || ps >= s->r->P) return fl_err(e, "trainer %d: recv '%s' from pserver %lld of %lld", t, out->args[j], (long long)ps, (long long)s->r->P);
                Recv rv = {.ps = (int)ps, .blk = find_blk(s, (int)ps, out->args[j], false),
                           .bytes = var_bytes(prog, b0, out->args[j], batch), .get_arrival = -1};
                rv.pieces = pieces_of(rv.bytes, s->o->piece);
                if (rv.pieces > MAX_PIECES)
                    return fl_err(e, "trainer %d: '%s' would travel in %lld pieces; the model takes at most %d (a larger piece)",
                                  t, out->args[j], (long long)rv.pieces, MAX_PIECES);
                FL_VEC_PUSH(&s->recvs[t], rv);
            }
            /* the run's GETs all leave at its first recv (the executor's prefetch) */
            bool last_of_run = i + 1 >= b0->ops.len || !fl_ops_is(b0->ops.data[i + 1], FL_OPID_recv);
            if (last_of_run) {
                prev = node(s, clock, CAT_COMPUTE, t, prev);
                for (size_t ri = 0; ri < s->recvs[t].len; ri++) {
                    Recv *rv = &s->recvs[t].data[ri];
                    s->left[t] += rv->pieces;
                    push(s, (Ev){.t = clock, .kind = EV_XFER, .node = prev, .src = s->r->trainer_host[t],
                                 .dst = s->r->pserver_host[rv->ps], .bytes = 0, .what = M_GET, .trainer = t,
                                 .ps = rv->ps, .recv = (int)ri});
                }
                gets_posted = true;
                s->polls_from[t] = clock;
            }
        }
    }
    if (!gets_posted) {
        prev = node(s, clock, CAT_COMPUTE, t, prev);
        s->polls_from[t] = clock;
    }
    s->end[t] = clock;
    s->end_node[t] = prev;
    s->compute[t] = clock;
    after[t] = post_wait;
    return FL_OK;
}

/* The group of cores rank k (trainers 0..T-1, then pservers) shares: its host's machine's
 * (0..machines-1), its host's own cores= (machines + host), or none (-1). */
static int cores_group(const Sim *s, int64_t k) {
    int h = k < s->r->T ? s->r->trainer_host[k] : s->r->pserver_host[k - s->r->T];
    const FlSimHost *hp = &s->cl->hosts.data[h];
    return hp->machine >= 0 ? hp->machine : hp->cores > 0 ? (int)s->cl->machines.len + h : -1;
}

/* The work of the ranks that share cores bounds the step from below, however the events line
 * up: a core does its ranks' work one piece after another. A machine's cores with bind=core: the
 * i-th of its ranks in rank order on core i mod cores, each core's sum; unbound (or a host's
 * cores=), the operating system spreads the ranks: their sum over the cores, or the busiest
 * rank's own. When that is longer than the event model's step (`path`), the difference is the
 * step's wait for it (cores_s). */
static void busiest_core(Sim *s, double path) {
    FlSimResult *r = s->r;
    int64_t nr = r->T + r->P;
    size_t nm = s->cl->machines.len, ng = nm + s->cl->hosts.len;
    int64_t *slot = fl_xcalloc((size_t)nr, sizeof(int64_t)), *seen = fl_xcalloc(ng, sizeof(int64_t));
    double *work = fl_xcalloc(ng * (size_t)nr, sizeof(double)); /* [group][core] */
    double *sum = fl_xcalloc(ng, sizeof(double)), *one = fl_xcalloc(ng, sizeof(double));
    for (int64_t k = 0; k < nr; k++) {
        int g = cores_group(s, k);
        if (g < 0) continue;
        int64_t cores = (size_t)g < nm ? s->cl->machines.data[g].cores : s->cl->hosts.data[(size_t)g - nm].cores;
        double w = k < r->T ? s->work_t[k] : s->work_p[k - r->T];
        slot[k] = seen[g]++ % cores;
        work[(size_t)g * (size_t)nr + (size_t)slot[k]] += w;
        sum[g] += w;
        one[g] = fmax(one[g], w);
    }
    double worst = 0;
    int wg = -1, wc = -1;
    for (size_t g = 0; g < ng; g++) {
        if (!seen[g]) continue;
        bool bind = g < nm && s->cl->machines.data[g].bind;
        int64_t cores = g < nm ? s->cl->machines.data[g].cores : s->cl->hosts.data[g - nm].cores;
        for (int64_t c = 0; bind && c < cores && c < nr; c++)
            if (work[g * (size_t)nr + (size_t)c] > worst) worst = work[g * (size_t)nr + (size_t)c], wg = (int)g, wc = (int)c;
        double load = fmax(sum[g] / (double)cores, one[g]);
        if (!bind && load > worst) worst = load, wg = (int)g, wc = -1;
    }
    r->busiest_machine = wg >= 0 && (size_t)wg < nm ? wg : -1;
    r->busiest_host = wg >= 0 && (size_t)wg >= nm ? wg - (int)nm : -1;
    r->busiest_core = wc;
    fl_buf_free(&r->busiest_ranks); /* its ranks, for the report */
    for (int64_t k = 0; k < nr && wg >= 0; k++)
        if (cores_group(s, k) == wg && (wc < 0 || slot[k] == wc))
            fl_buf_printf(&r->busiest_ranks, " %c%lld", k < r->T ? 't' : 'p', (long long)(k < r->T ? k : k - r->T));
    r->busiest_work_s = worst;
    r->cores_s = worst > path ? worst - path : 0;
    free(slot), free(seen), free(work), free(sum), free(one);
}

static const FlBundle *role_of(const FlPlan *plan, const char *role, int64_t idx) {
    for (size_t i = 0; i < plan->roles.len; i++)
        if (plan->roles.data[i]->role && !strcmp(plan->roles.data[i]->role, role) && plan->roles.data[i]->role_index == idx)
            return plan->roles.data[i];
    return NULL;
}

FlStatus fl_sim_run(const FlPlan *plan, const FlSimCalib *calib, const FlSimCluster *cl, const FlSimOptions *o,
                    FlSimResult *r, FlErr *e) {
    *r = (FlSimResult){0};
    if (strcmp(plan->mode, "sync") != 0)
        return fl_err(e, "the model takes sync plans; this one is in %s mode", plan->mode);
    if (o->batch < 1 || o->batch > FL_SIM_BATCH_MAX)
        return fl_err(e, "a batch of %lld rows per trainer: the model takes 1 to %d", (long long)o->batch, FL_SIM_BATCH_MAX);
    if (o->piece < 8 || o->piece % 8 || o->piece > FL_RULE_PIECE_MAX)
        return fl_err(e, "a piece of %lld bytes: the model takes flrun's pieces, a multiple of 8 from 8 to %u",
                      (long long)o->piece, FL_RULE_PIECE_MAX);
    int64_t T = plan->trainers, P = plan->pservers;
    r->T = T, r->P = P;
    r->nhosts = (int)cl->hosts.len;
    r->links = fl_xcalloc(cl->hosts.len, sizeof *r->links);
    r->servers = fl_xcalloc((size_t)P + 1, sizeof *r->servers);
    r->trainer_host = fl_xcalloc((size_t)T, sizeof(int));
    r->pserver_host = fl_xcalloc((size_t)P + 1, sizeof(int));
    if (place(cl, T, P, r->trainer_host, r->pserver_host, e) != FL_OK) goto fail_r;
    for (int64_t p = 0; p < P; p++) r->servers[p].host = r->pserver_host[p];
    /* every pair of hosts that talks needs the links' figures */
    for (int64_t t = 0; t < T; t++)
        for (int64_t p = 0; p < P; p++) {
            int a = r->trainer_host[t], b = r->pserver_host[p];
            if (a == b && cl->local_bandwidth <= 0) {
                fl_err(e, "%s: trainer %lld and pserver %lld share host '%s', and the spec has no 'local' line", cl->where,
                       (long long)t, (long long)p, cl->hosts.data[a].name);
                goto fail_r;
            }
            for (int k = 0; k < 2 && a != b; k++) {
                const FlSimHost *h = &cl->hosts.data[k ? b : a];
                if (h->bandwidth <= 0) {
                    fl_err(e, "%s:%d: host '%s' talks to host '%s' but has no bandwidth=", cl->where, h->line, h->name,
                           cl->hosts.data[k ? a : b].name);
                    goto fail_r;
                }
            }
        }
    Sim s = {.c = calib, .cl = cl, .o = o, .r = r};
    size_t nh = cl->hosts.len;
    s.out = fl_xcalloc(nh, sizeof(Res)), s.in = fl_xcalloc(nh, sizeof(Res)), s.loc = fl_xcalloc(nh, sizeof(Res));
    s.cpu = fl_xcalloc((size_t)P + 1, sizeof(Res));
    s.sw = fl_xcalloc(cl->machines.len + 1, sizeof(Res));
    s.blks = fl_xcalloc((size_t)P + 1, sizeof *s.blks);
    s.recvs = fl_xcalloc((size_t)T, sizeof *s.recvs);
    s.end = fl_xcalloc((size_t)T, sizeof(double));
    s.end_node = fl_xcalloc((size_t)T, sizeof(int));
    s.left = fl_xcalloc((size_t)T, sizeof(int64_t));
    s.lr_cost = fl_xcalloc((size_t)P + 1, sizeof(double));
    s.compute = fl_xcalloc((size_t)T, sizeof(double));
    s.calls = fl_xcalloc((size_t)T, sizeof *s.calls);
    s.polls_from = fl_xcalloc((size_t)T, sizeof(double));
    s.work_t = fl_xcalloc((size_t)T, sizeof(double)), s.work_p = fl_xcalloc((size_t)P + 1, sizeof(double));
    double *after = fl_xcalloc((size_t)T, sizeof(double));
    FlStatus st = FL_OK;
    /* each host's compute factor: compute=, and the share of a core that its trainers get when
     * they outnumber the cores (the host's cores=, or its machine's for all the machine's hosts'
     * trainers), and its pservers likewise: a sync step's trainers compute side by side while
     * the pservers wait for their gradients, and the pservers update while the trainers wait for
     * the parameters; a waiting rank sleeps between its looks and leaves the core to the others */
    size_t nm = cl->machines.len;
    s.tshare = fl_xcalloc(nh, sizeof(double)), s.pshare = fl_xcalloc(nh, sizeof(double));
    s.wakeup = fl_xcalloc(nm + 1, sizeof(double)), s.pollwait = fl_xcalloc(nm + 1, sizeof(double));
    int64_t *mt = fl_xcalloc(nm + 1, sizeof(int64_t)), *ht = fl_xcalloc(nh, sizeof(int64_t));
    int64_t *mps = fl_xcalloc(nm + 1, sizeof(int64_t)), *hps = fl_xcalloc(nh, sizeof(int64_t));
    for (int64_t t = 0; t < T; t++) ht[r->trainer_host[t]]++;
    for (int64_t p = 0; p < P; p++) hps[r->pserver_host[p]]++;
    for (size_t h = 0; h < nh; h++)
        if (cl->hosts.data[h].machine >= 0) mt[cl->hosts.data[h].machine] += ht[h], mps[cl->hosts.data[h].machine] += hps[h];
    for (size_t h = 0; h < nh; h++) {
        const FlSimHost *hp = &cl->hosts.data[h];
        int64_t cores = hp->machine >= 0 ? cl->machines.data[hp->machine].cores : hp->cores;
        int64_t tr = hp->machine >= 0 ? mt[hp->machine] : ht[h], ps = hp->machine >= 0 ? mps[hp->machine] : hps[h];
        s.tshare[h] = hp->compute * (cores > 0 && tr > cores ? (double)tr / (double)cores : 1);
        s.pshare[h] = hp->compute * (cores > 0 && ps > cores ? (double)ps / (double)cores : 1);
    }
    for (size_t m = 0; m < nm && st == FL_OK; m++) {
        const FlSimMachine *mp = &cl->machines.data[m];
        s.wakeup[m] = mp->wakeup >= 0 ? mp->wakeup : calib->wakeup_us * 1e-6;
        s.pollwait[m] = mp->pollwait >= 0 ? mp->pollwait : calib->pollwait_us * 1e-6;
        if (s.pollwait[m] < 0 || (mp->userswitch && s.wakeup[m] < 0))
            st = fl_err(e, "%s:%d: the machine's ranks wait for wake-ups: the calibration has no '%s' line (flc calibrate "
                        "measures it), nor the line %s=", cl->where, mp->line, s.pollwait[m] < 0 ? "pollwait" : "wakeup",
                        s.pollwait[m] < 0 ? "pollwait" : "wakeup");
    }
    free(mt), free(ht), free(mps), free(hps);
    for (int64_t p = 0; p < P && st == FL_OK; p++) {
        const FlBundle *bd = role_of(plan, "pserver", p);
        st = bd ? read_server(&s, bd, (int)p, e) : fl_err(e, "the plan has no pserver %lld", (long long)p);
    }
    for (int64_t t = 0; t < T && st == FL_OK; t++) {
        const FlBundle *bd = role_of(plan, "trainer", t);
        st = bd ? walk_trainer(&s, bd, (int)t, after, e) : fl_err(e, "the plan has no trainer %lld", (long long)t);
    }
    while (st == FL_OK && s.heap.len) {
        Ev ev = pop(&s);
        if (ev.kind == EV_XFER) transfer(&s, ev);
        else if (ev.kind == EV_ARRIVE) arrive(&s, &ev);
        else if (ev.kind == EV_FLOW) flow_event(&s, &ev);
        else done(&s, &ev);
    }
    for (int64_t t = 0; t < T && st == FL_OK; t++)
        if (s.left[t] != 0) st = fl_err(e, "trainer %lld: %lld answer pieces never came (a recv with no matching block?)",
                                        (long long)t, (long long)s.left[t]);
    if (st == FL_OK) {
        int crit = 0;
        double best = -1;
        for (int64_t t = 0; t < T; t++) {
            double end = s.end[t] + after[t];
            if (end > best) best = end, crit = (int)t;
        }
        r->critical_trainer = crit;
        r->step_s = best;
        busiest_core(&s, best);
        double cat[4] = {after[crit], 0, 0, 0};
        for (int n = s.end_node[crit]; n >= 0; n = s.nodes.data[n].pred) {
            const Node *x = &s.nodes.data[n];
            if (x->cat == CAT_COMPUTE) {
                /* a compute node's chain runs back to the step's start: a trainer's compute up
                 * to x->end. Another trainer's is concurrent with ours: the part beyond our own
                 * compute is the wait for its gradient (the sync barrier) */
                double own = x->trainer == crit ? x->end : fmin(x->end, s.compute[crit]);
                cat[CAT_COMPUTE] += own;
                cat[CAT_WAIT] += x->end - own;
                break;
            }
            double pe = x->pred >= 0 ? s.nodes.data[x->pred].end : 0;
            cat[x->cat] += x->end - pe;
        }
        r->compute_s = cat[CAT_COMPUTE], r->transfer_s = cat[CAT_TRANSFER], r->update_s = cat[CAT_UPDATE],
        r->wait_s = cat[CAT_WAIT];
        r->step_s += r->cores_s;
        if (!isfinite(r->step_s))
            st = fl_err(e, "the step's time overflows: trainer %d's vars are too large to time (batch %lld)", crit,
                        (long long)o->batch);
        r->trainer_compute_s = s.compute[crit] + after[crit];
        for (int64_t p = 0; p < P; p++) {
            r->servers[p].busy_until = s.cpu[p].free;
            for (size_t i = 0; i < s.blks[p].len; i++) {
                r->servers[p].in_bytes += s.blks[p].data[i].bytes * (double)T;
            }
        }
        for (int64_t t = 0; t < T; t++)
            for (size_t i = 0; i < s.recvs[t].len; i++) r->servers[s.recvs[t].data[i].ps].out_bytes += s.recvs[t].data[i].bytes;
    }
    for (int64_t p = 0; p < P; p++) {
        for (size_t i = 0; i < s.blks[p].len; i++) {
            SBlk *b = &s.blks[p].data[i];
            free(b->grad), free(b->arrived), free(b->ready), free(b->ready_node), free(b->done), free(b->done_node);
            FL_VEC_FREE(&b->parked);
        }
        FL_VEC_FREE(&s.blks[p]);
    }
    for (int64_t t = 0; t < T; t++) {
        FL_VEC_FREE(&s.recvs[t]);
        FL_VEC_FREE(&s.calls[t]);
    }
    free(s.out), free(s.in), free(s.loc), free(s.sw), free(s.cpu), free(s.blks), free(s.recvs), free(s.end), free(s.end_node);
    free(s.left), free(s.lr_cost), free(s.compute), free(after), free(s.calls), free(s.polls_from);
    free(s.tshare), free(s.pshare), free(s.wakeup), free(s.pollwait), free(s.work_t), free(s.work_p);
    FL_VEC_FREE(&s.nodes);
    FL_VEC_FREE(&s.heap);
    FL_VEC_FREE(&s.flows);
    if (st != FL_OK) goto fail_r;
    return FL_OK;
fail_r:
    fl_sim_result_fini(r);
    return FL_ERROR;
}

void fl_sim_result_fini(FlSimResult *r) {
    free(r->links), free(r->servers), free(r->trainer_host), free(r->pserver_host);
    fl_buf_free(&r->busiest_ranks);
    *r = (FlSimResult){0};
}

static void put_bytes(FlBuf *b, double v) {
    if (v >= 1e9) fl_buf_printf(b, "%9.3f GB", v / 1e9);
    else if (v >= 1e6) fl_buf_printf(b, "%9.3f MB", v / 1e6);
    else if (v >= 1e3) fl_buf_printf(b, "%9.3f kB", v / 1e3);
    else fl_buf_printf(b, "%9.0f  B", v);
}

void fl_sim_report(const FlPlan *plan, const FlSimCluster *cl, const FlSimOptions *o, const FlSimResult *r, FlBuf *b) {
    fl_buf_printf(b, "plan: %s mode, %lld trainers, %lld pservers; batch %lld per trainer, piece %lld bytes\n", plan->mode,
                  (long long)r->T, (long long)r->P, (long long)o->batch, (long long)o->piece);
    fl_buf_printf(b, "hosts:\n");
    for (int h = 0; h < r->nhosts; h++) {
        FlBuf who = {0};
        for (int64_t t = 0; t < r->T; t++)
            if (r->trainer_host[t] == h) fl_buf_printf(&who, " t%lld", (long long)t);
        for (int64_t p = 0; p < r->P; p++)
            if (r->pserver_host[p] == h) fl_buf_printf(&who, " p%lld", (long long)p);
        fl_buf_printf(b, "  %-12s%s\n", cl->hosts.data[h].name, who.len ? fl_buf_str(&who) : " (no ranks)");
        fl_buf_free(&who);
    }
    double st = r->step_s;
    fl_buf_printf(b, "predicted step time: %.3f ms (%.0f samples/s over %lld trainers)\n", st * 1e3,
                  st > 0 ? (double)(o->batch * r->T) / st : 0.0, (long long)r->T);
    fl_buf_printf(b, "critical path (trainer %d; its own compute %.3f ms):\n", r->critical_trainer, r->trainer_compute_s * 1e3);
    const char *names[4] = {"compute", "transfer", "server update", "barrier wait"};
    double v[4] = {r->compute_s, r->transfer_s, r->update_s, r->wait_s};
    for (int i = 0; i < 4; i++)
        fl_buf_printf(b, "  %-14s %10.3f ms %6.1f%%\n", names[i], v[i] * 1e3, st > 0 ? 100 * v[i] / st : 0.0);
    if (r->cores_s > 0) {
        fl_buf_printf(b, "  %-14s %10.3f ms %6.1f%%\n", "shared cores", r->cores_s * 1e3, st > 0 ? 100 * r->cores_s / st : 0.0);
        if (r->busiest_core >= 0)
            fl_buf_printf(b, "  (core %d of the machine of line %d takes%s in turn: %.3f ms of work a step)\n", r->busiest_core,
                          cl->machines.data[r->busiest_machine].line, fl_buf_str(&r->busiest_ranks), r->busiest_work_s * 1e3);
        else if (r->busiest_machine >= 0)
            fl_buf_printf(b, "  (the %lld cores of the machine of line %d take%s: at least %.3f ms of work a step on the busiest)\n",
                          (long long)cl->machines.data[r->busiest_machine].cores, cl->machines.data[r->busiest_machine].line,
                          fl_buf_str(&r->busiest_ranks), r->busiest_work_s * 1e3);
        else
            fl_buf_printf(b, "  (the %lld cores of host '%s' take%s: at least %.3f ms of work a step on the busiest)\n",
                          (long long)cl->hosts.data[r->busiest_host].cores, cl->hosts.data[r->busiest_host].name,
                          fl_buf_str(&r->busiest_ranks), r->busiest_work_s * 1e3);
    }
    fl_buf_printf(b, "bytes per link per step (tensor payload; %lld messages):\n", (long long)r->messages);
    fl_buf_printf(b, "  %-12s %12s %12s %12s\n", "host", "out", "in", "local");
    for (int h = 0; h < r->nhosts; h++) {
        fl_buf_printf(b, "  %-12s ", cl->hosts.data[h].name);
        put_bytes(b, r->links[h].out_bytes);
        fl_buf_puts(b, " ");
        put_bytes(b, r->links[h].in_bytes);
        fl_buf_puts(b, " ");
        put_bytes(b, r->links[h].local_bytes);
        fl_buf_puts(b, "\n");
    }
    fl_buf_printf(b, "pserver load per step:\n  %-8s %-12s %7s %10s %12s %12s %10s\n", "pserver", "host", "blocks",
                  "elements", "in", "out", "update");
    for (int64_t p = 0; p < r->P; p++) {
        const FlSimServerLoad *s = &r->servers[p];
        fl_buf_printf(b, "  %-8lld %-12s %7lld %10lld ", (long long)p, cl->hosts.data[s->host].name, (long long)s->blocks,
                      (long long)s->elements);
        put_bytes(b, s->in_bytes);
        fl_buf_puts(b, " ");
        put_bytes(b, s->out_bytes);
        fl_buf_printf(b, " %7.3f ms\n", s->update_s * 1e3);
    }
}
