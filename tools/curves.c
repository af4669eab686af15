/* curves.c: training curves (curves.h): reading flrun's log, scales and ticks, and the picture.
 *
 * How: the picture is a column of panels, one per figure, all with the same step axis from 0 to
 * the last step of any run; a panel's value axis is linear over "nice" ticks (1, 2 or 5 times a
 * power of ten) or, for positive values spanning a factor of 30 or more, logarithmic over whole
 * decades. Every coordinate goes through one Scale (a value's pixel), so a point is where its
 * tick says.
 */
#define _GNU_SOURCE
#include "tools/curves.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/svg.h"

/* ---------------------------------------------------------------- the data */

void fl_curves_init(FlCurves *c, const char *label, const char *const *names, size_t n) {
    memset(c, 0, sizeof *c);
    c->label = fl_xstrdup(label);
    for (size_t i = 0; i < n; i++) FL_VEC_PUSH(&c->names, fl_xstrdup(names[i]));
}

void fl_curves_fini(FlCurves *c) {
    for (size_t i = 0; i < c->names.len; i++) free(c->names.data[i]);
    for (size_t i = 0; i < c->rows.len; i++) free(c->rows.data[i].v);
    FL_VEC_FREE(&c->names);
    FL_VEC_FREE(&c->rows);
    free(c->label);
    memset(c, 0, sizeof *c);
}

void fl_curves_add(FlCurves *c, bool test, int64_t epoch, int64_t step, const double *v) {
    FlCurveRow r = {test, epoch, step, fl_xcalloc(c->names.len + 1, sizeof(double))};
    memcpy(r.v, v, c->names.len * sizeof(double));
    FL_VEC_PUSH(&c->rows, r);
}

/* ---------------------------------------------------------------- reading a log */

/* The fields of one CSV line (no quoting: a log's fields never hold commas), cut in place into
 * f[0..max); returns their count (all of them, also past max). */
static size_t split(char *line, char **f, size_t max) {
    size_t n = 0;
    for (char *p = line;; n++) {
        if (n < max) f[n] = p;
        char *comma = strchr(p, ',');
        if (!comma) return n + 1;
        if (n < max) *comma = 0;
        p = comma + 1;
    }
}

/* The number of fields of a line. */
static size_t fields(const char *line) {
    size_t n = 1;
    for (const char *p = line; (p = strchr(p, ',')); p++) n++;
    return n;
}

static bool parse_i64(const char *s, int64_t *out) {
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || *end) return false;
    *out = v;
    return true;
}

static bool parse_f64(const char *s, double *out) {
    char *end;
    *out = strtod(s, &end);
    return end != s && !*end;
}

FlStatus fl_curves_read(const char *path, const char *label, FlCurves *out, FlErr *e) {
    size_t len;
    char *text = fl_read_file(path, &len, e);
    if (!text) return FL_ERROR;
    memset(out, 0, sizeof *out);
    FlStatus st = FL_OK;
    char **f = NULL;
    double *v = NULL;
    size_t nf = 0, lineno = 0;
    for (char *line = text, *next; st == FL_OK && line < text + len; line = next) {
        char *nl = memchr(line, '\n', (size_t)(text + len - line));
        next = nl ? nl + 1 : text + len;
        size_t l = (size_t)((nl ? nl : text + len) - line);
        lineno++;
        if (memchr(line, 0, l)) {
            st = fl_err(e, "%s:%zu: a NUL byte: not an flrun log (a text file)", path, lineno);
            break;
        }
        line[l] = 0; /* the '\n', or the terminator fl_read_file adds */
        if (l && line[l - 1] == '\r') line[--l] = 0;
        if (!l) continue;
        if (!f) { /* the header */
            size_t n = fields(line);
            f = fl_xcalloc(n + 1, sizeof *f);
            nf = split(line, f, n);
            if (nf < 5 || strcmp(f[0], "phase") || strcmp(f[1], "rank") || strcmp(f[2], "epoch") || strcmp(f[3], "step")) {
                st = fl_err(e, "%s:%zu: not an flrun log: its header should start with 'phase,rank,epoch,step,loss' "
                            "(flrun --log writes one)", path, lineno);
                break;
            }
            fl_curves_init(out, label, (const char *const *)f + 4, nf - 4);
            v = fl_xcalloc(nf, sizeof *v);
            continue;
        }
        char **g = fl_xcalloc(nf + 1, sizeof *g);
        size_t n = split(line, g, nf);
        int64_t rank = 0, epoch = 0, step = 0;
        bool test = n == nf && !strcmp(g[0], "test");
        if (n != nf) st = fl_err(e, "%s:%zu: %zu fields, but the header has %zu", path, lineno, n, nf);
        else if (!test && strcmp(g[0], "train"))
            st = fl_err(e, "%s:%zu: phase '%s' (a log's rows are 'train' or 'test')", path, lineno, g[0]);
        else if (!parse_i64(g[1], &rank) || !parse_i64(g[2], &epoch) || !parse_i64(g[3], &step))
            st = fl_err(e, "%s:%zu: rank, epoch and step must be integers, found '%s', '%s', '%s'", path, lineno, g[1],
                        g[2], g[3]);
        for (size_t i = 4; st == FL_OK && i < nf; i++)
            if (!parse_f64(g[i], &v[i - 4]))
                st = fl_err(e, "%s:%zu: %s: '%s' is not a number", path, lineno, f[i], g[i]);
        if (st == FL_OK) fl_curves_add(out, test, epoch, step, v);
        free(g);
    }
    if (st == FL_OK && !f) st = fl_err(e, "%s: empty: not an flrun log", path);
    if (st != FL_OK && f) fl_curves_fini(out);
    free(f);
    free(v);
    free(text);
    return st;
}

/* ---------------------------------------------------------------- scales */

typedef struct Scale {
    double lo, hi;     /* the domain (log10 of values when log) */
    double p0, p1;     /* the pixels of lo and hi */
    bool log;
} Scale;

static double px(const Scale *s, double v) {
    double x = s->log ? (v > 0 ? log10(v) : NAN) : v;
    return s->p0 + (x - s->lo) / (s->hi - s->lo) * (s->p1 - s->p0);
}

/* 1, 2 or 5 times a power of ten, near span / 5. */
static double nice_step(double span) {
    double raw = span / 5, mag = pow(10, floor(log10(raw))), f = raw / mag;
    return (f < 1.5 ? 1 : f < 3.5 ? 2 : f < 7.5 ? 5 : 10) * mag;
}

/* A value axis for values in [lo, hi] (finite). */
static Scale value_scale(double lo, double hi, double p0, double p1) {
    Scale s = {.p0 = p0, .p1 = p1};
    if (lo > 0 && hi / lo >= 30) {
        s.log = true;
        s.lo = floor(log10(lo));
        s.hi = ceil(log10(hi));
        return s;
    }
    if (hi - lo < 1e-12 * (fabs(hi) + 1)) { /* flat: one unit (or a tenth of it) around it */
        double d = fabs(lo) > 0 ? fabs(lo) * 0.1 : 1;
        lo -= d;
        hi += d;
    }
    double step = nice_step(hi - lo);
    s.lo = floor(lo / step) * step;
    s.hi = ceil(hi / step) * step;
    return s;
}

/* The ticks of a value axis: values into t (at most max), their count. */
static size_t ticks(const Scale *s, double *t, size_t max) {
    size_t n = 0;
    if (s->log) {
        int decades = (int)(s->hi - s->lo);
        for (int k = (int)s->lo; k <= (int)s->hi && n < max; k++)
            for (int m = 1; m <= 5 && n < max; m += (m == 1 ? 1 : 3)) { /* 1, 2, 5 */
                if (m > 1 && (decades > 2 || k == (int)s->hi)) continue;
                t[n++] = m * pow(10, k);
            }
        return n;
    }
    double step = nice_step(s->hi - s->lo);
    for (double k = ceil(s->lo / step - 1e-9); k * step <= s->hi + step * 1e-9 && n < max; k++) t[n++] = k * step;
    return n;
}

static void tick_label(char *buf, size_t n, double v) {
    if (fabs(v) < 1e-12) v = 0; /* no "-0" or "1e-17" at zero */
    snprintf(buf, n, "%g", v);
}

/* ---------------------------------------------------------------- the picture */

enum {
    WIDTH = 860,
    LEFT = 80,
    RIGHT = 24,
    TOP = 40,      /* the title's band; the legend follows */
    LEGEND_ROW = 20,
    PANEL = 250,   /* a panel: PAD_TOP, the plot, its tick labels and the step label */
    PAD_TOP = 18,
    PLOT = 182,
    MAX_TICKS = 64,
};

static const char *const colours[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e",
                                      "#9467bd", "#8c564b", "#e377c2", "#17becf"};

static const char *colour(size_t run) { return colours[run % FL_ARRAY_LEN(colours)]; }

/* The figures of every run, each once, in order of first appearance. */
static size_t all_names(const FlCurves *runs, size_t n, const char ***out) {
    size_t cap = 0;
    for (size_t r = 0; r < n; r++) cap += runs[r].names.len;
    const char **names = fl_xcalloc(cap + 1, sizeof *names);
    size_t k = 0;
    for (size_t r = 0; r < n; r++)
        for (size_t i = 0; i < runs[r].names.len; i++) {
            bool seen = false;
            for (size_t j = 0; j < k && !seen; j++) seen = !strcmp(names[j], runs[r].names.data[i]);
            if (!seen) names[k++] = runs[r].names.data[i];
        }
    *out = names;
    return k;
}

static long name_index(const FlCurves *c, const char *name) {
    for (size_t i = 0; i < c->names.len; i++)
        if (!strcmp(c->names.data[i], name)) return (long)i;
    return -1;
}

/* Appends a series' pixels (a NaN breaks the line); with more points than 2 per pixel column of
 * the plot, each column's lowest and highest point, in their order. */
typedef struct Pts {
    FL_VEC(double) x;
    FL_VEC(double) y;
} Pts;

static void pts_push(Pts *p, double x, double y) {
    FL_VEC_PUSH(&p->x, x);
    FL_VEC_PUSH(&p->y, y);
}

static void reduce(const Pts *in, Pts *out) {
    size_t i = 0, n = in->x.len;
    while (i < n) {
        if (!isfinite(in->x.data[i]) || !isfinite(in->y.data[i])) {
            pts_push(out, NAN, NAN);
            i++;
            continue;
        }
        double col = floor(in->x.data[i]);
        size_t lo = i, hi = i, j = i;
        for (; j < n && isfinite(in->x.data[j]) && isfinite(in->y.data[j]) && floor(in->x.data[j]) == col; j++) {
            if (in->y.data[j] < in->y.data[lo]) lo = j;
            if (in->y.data[j] > in->y.data[hi]) hi = j;
        }
        size_t a = lo < hi ? lo : hi, b = lo < hi ? hi : lo;
        pts_push(out, in->x.data[a], in->y.data[a]);
        if (b != a) pts_push(out, in->x.data[b], in->y.data[b]);
        i = j;
    }
}

/* The width of run `run` of n's lines: the first run's the widest, so that where runs coincide
 * (a job following its local run step by step) every colour still shows. */
static double line_width(size_t run, size_t n, bool test) {
    double extra = n > 1 ? 1.6 * (double)(n - 1 - run) / (double)(n - 1) : 0;
    return (test ? 2.0 : 1.2) + extra;
}

static void series(FlBuf *b, const FlCurves *c, size_t run, size_t nruns, long fig, bool test, const Scale *xs,
                   const Scale *ys, const char *metric) {
    Pts p = {0}, q = {0};
    for (size_t i = 0; i < c->rows.len; i++) {
        const FlCurveRow *r = &c->rows.data[i];
        if (r->test != test) continue;
        double v = r->v[fig];
        pts_push(&p, px(xs, (double)r->step), isfinite(v) ? px(ys, v) : NAN);
    }
    const Pts *use = &p;
    if (p.x.len > 2 * (size_t)fabs(xs->p1 - xs->p0)) {
        reduce(&p, &q);
        use = &q;
    }
    FlBuf extra = {0};
    fl_buf_puts(&extra, "class=\"series\" data-run=\"");
    fl_svg_escape(&extra, c->label);
    fl_buf_puts(&extra, "\" data-metric=\"");
    fl_svg_escape(&extra, metric);
    fl_buf_printf(&extra, "\" data-phase=\"%s\"", test ? "test" : "train");
    fl_svg_path(b, use->x.data, use->y.data, use->x.len, colour(run), line_width(run, nruns, test), test ? "6 4" : NULL,
                fl_buf_str(&extra));
    for (size_t i = 0; test && i < use->x.len; i++) /* a test figure per epoch: dots, seen even alone */
        if (isfinite(use->x.data[i]) && isfinite(use->y.data[i]))
            fl_buf_printf(b, "<circle cx=\"%.2f\" cy=\"%.2f\" r=\"2.50\" fill=\"%s\"/>\n", use->x.data[i],
                          use->y.data[i], colour(run));
    fl_buf_free(&extra);
    FL_VEC_FREE(&p.x);
    FL_VEC_FREE(&p.y);
    FL_VEC_FREE(&q.x);
    FL_VEC_FREE(&q.y);
}

/* The legend, from y: each run's colour and name, then the train and test line styles; wraps at
 * the picture's width. Returns the y below it. */
static double legend(FlBuf *b, const FlCurves *runs, size_t n, double y) {
    double x = LEFT;
    fl_svg_group(b, "class=\"legend\"");
    for (size_t k = 0; k < n + 2; k++) {
        const char *text = k < n ? runs[k].label : k == n ? "train" : "test";
        double w = 34 + 7.2 * (double)strlen(text) + 18;
        if (x + w > WIDTH - RIGHT && x > LEFT) {
            x = LEFT;
            y += LEGEND_ROW;
        }
        const char *stroke = k < n ? colour(k) : "#555555";
        fl_svg_line(b, x, y - 4, x + 26, y - 4, stroke, k == n + 1 ? 2.0 : 2.4, k == n + 1 ? "6 4" : NULL);
        fl_svg_text(b, x + 32, y, FL_SVG_START, 12, "#222222", 0, text);
        x += w;
    }
    fl_svg_group_end(b);
    return y + LEGEND_ROW;
}

/* The steps at which the first run's epochs end (the last training step of each), into ends
 * (indexed by epoch - 1; 0 where an epoch has no training row); returns the epochs' count. */
static int64_t epoch_ends(const FlCurves *c, int64_t **out) {
    int64_t last = 0;
    for (size_t i = 0; i < c->rows.len; i++)
        if (c->rows.data[i].epoch > last) last = c->rows.data[i].epoch;
    int64_t *ends = fl_xcalloc((size_t)last + 1, sizeof *ends);
    for (size_t i = 0; i < c->rows.len; i++) {
        const FlCurveRow *r = &c->rows.data[i];
        if (!r->test && r->epoch >= 1 && r->step > ends[r->epoch - 1]) ends[r->epoch - 1] = r->step;
    }
    *out = ends;
    return last;
}

static void panel(FlBuf *b, const FlCurves *runs, size_t n, const char *metric, double top, const Scale *xs,
                  const int64_t *ends, int64_t nepochs) {
    double y0 = top + PAD_TOP, y1 = y0 + PLOT;
    double lo = INFINITY, hi = -INFINITY;
    for (size_t r = 0; r < n; r++) {
        long k = name_index(&runs[r], metric);
        for (size_t i = 0; k >= 0 && i < runs[r].rows.len; i++) {
            double v = runs[r].rows.data[i].v[k];
            if (!isfinite(v)) continue;
            if (v < lo) lo = v;
            if (v > hi) hi = v;
        }
    }
    if (!(lo <= hi)) lo = 0, hi = 1; /* no finite value: an empty panel */
    Scale ys = value_scale(lo, hi, y1, y0);
    FlBuf extra = {0};
    fl_buf_puts(&extra, "class=\"panel\" data-metric=\"");
    fl_svg_escape(&extra, metric);
    fl_buf_putc(&extra, '"');
    fl_svg_group(b, fl_buf_str(&extra));
    fl_buf_free(&extra);
    /* grid and value ticks */
    double t[MAX_TICKS];
    char label[64];
    size_t nt = ticks(&ys, t, MAX_TICKS);
    for (size_t i = 0; i < nt; i++) {
        double y = px(&ys, t[i]);
        fl_svg_line(b, LEFT, y, WIDTH - RIGHT, y, "#e6e6e6", 1, NULL);
        tick_label(label, sizeof label, t[i]);
        fl_svg_text(b, LEFT - 6, y + 4, FL_SVG_END, 11, "#444444", 0, label);
    }
    /* step ticks */
    Scale xt = *xs;
    nt = ticks(&xt, t, MAX_TICKS);
    for (size_t i = 0; i < nt; i++) {
        double x = px(xs, t[i]);
        fl_svg_line(b, x, y1, x, y1 + 5, "#444444", 1, NULL);
        tick_label(label, sizeof label, t[i]);
        fl_svg_text(b, x, y1 + 18, FL_SVG_MIDDLE, 11, "#444444", 0, label);
    }
    /* the first run's epochs: a dotted line at each one's end, numbered (some, when many) */
    int64_t every = nepochs > 15 ? (nepochs + 14) / 15 : 1;
    for (int64_t e = 1; e <= nepochs; e++) {
        if (!ends[e - 1]) continue;
        double x = px(xs, (double)ends[e - 1]);
        fl_svg_line(b, x, y0, x, y1, "#b0b0b0", 1, "2 3");
        if (e % every == 0 || e == 1) {
            snprintf(label, sizeof label, "%lld", (long long)e);
            fl_svg_text(b, x - 3, y0 + 11, FL_SVG_END, 9, "#888888", 0, label);
        }
    }
    fl_svg_rect(b, LEFT, y0, WIDTH - RIGHT - LEFT, PLOT, "none", "#888888");
    /* the series */
    for (size_t r = 0; r < n; r++) {
        long k = name_index(&runs[r], metric);
        if (k < 0) continue;
        series(b, &runs[r], r, n, k, false, xs, &ys, metric);
        series(b, &runs[r], r, n, k, true, xs, &ys, metric);
    }
    /* the axes' names */
    FlBuf name = {0};
    fl_buf_printf(&name, "%s%s", metric, ys.log ? " (log scale)" : "");
    fl_svg_text(b, LEFT - 52, (y0 + y1) / 2, FL_SVG_MIDDLE, 13, "#222222", -90, fl_buf_str(&name));
    fl_buf_free(&name);
    fl_svg_text(b, (LEFT + WIDTH - RIGHT) / 2.0, y1 + 36, FL_SVG_MIDDLE, 12, "#222222", 0,
                nepochs > 0 ? "step (dotted: end of epoch)" : "step");
    fl_svg_group_end(b);
}

void fl_curves_svg(const FlCurves *runs, size_t n, const char *title, FlBuf *out) {
    FL_ASSERT(n >= 1);
    const char **names;
    size_t nm = all_names(runs, n, &names);
    int64_t last = 1;
    for (size_t r = 0; r < n; r++)
        for (size_t i = 0; i < runs[r].rows.len; i++)
            if (runs[r].rows.data[i].step > last) last = runs[r].rows.data[i].step;
    /* the legend's height first: the picture's size depends on it */
    FlBuf scratch = {0};
    double below = legend(&scratch, runs, n, TOP + 18);
    fl_buf_free(&scratch);
    int height = (int)below + 6 + (int)(nm ? nm : 1) * PANEL;
    fl_svg_begin(out, WIDTH, height, title);
    fl_svg_text(out, WIDTH / 2.0, 26, FL_SVG_MIDDLE, 16, "#000000", 0, title);
    legend(out, runs, n, TOP + 18);
    Scale xs = {.lo = 0, .hi = (double)last, .p0 = LEFT, .p1 = WIDTH - RIGHT};
    int64_t *ends;
    int64_t nepochs = epoch_ends(&runs[0], &ends);
    for (size_t m = 0; m < nm; m++) panel(out, runs, n, names[m], below + 6 + (double)m * PANEL, &xs, ends, nepochs);
    if (!nm) fl_svg_text(out, WIDTH / 2.0, below + 60, FL_SVG_MIDDLE, 13, "#444444", 0, "(no figures in the log)");
    fl_svg_end(out);
    free(ends);
    free(names);
}
