/* data.c: CSV readers, split, normalisation, shuffling, batching and trainer shares (see data.h).
 *
 * How: a file is read line by line through zlib (gzopen reads plain files too), each line cut at
 * the separator and the fields that feeds use parsed strictly into the source's raw arrays: double
 * for float feeds, int64 for int64 feeds, [rows, cols] row-major per feed. A dataset is a list of
 * source rows materialised once in each feed's dtype, normalised and scaled, so that filling a
 * batch is one memcpy per row. An epoch is a row order over a dataset.
 *
 * A sequence feed (FlDataFeed.levels > 0) has a variable number of values per row, so it keeps
 * its values apart from the dense feeds' [rows, cols] arrays: a Seq holds all the rows' values one
 * after the other and the offsets that cut them into rows (and sub-sequences), the same absolute
 * offsets a packed batch gets. Split, shuffle and batches pick rows, so sequences stay whole.
 *
 * Invariants: sources, datasets and epochs never change after their constructor returns (so they
 * may be shared by threads); every permutation comes from perm() with an explicit seed, never from
 * global state; arrays whose size depends on the data are allocated with malloc and a failure is
 * an error, not an abort.
 */
#define _GNU_SOURCE /* strtod_l: parse numbers in the C locale whatever the process's locale */
#include "runtime/data/data.h"

#include <errno.h>
#include <float.h>
#include <limits.h>
#include <locale.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <zlib.h>

/* An owned copy of an FlDataFeed. */
typedef struct Feed {
    char *name;
    size_t *cols;
    size_t ncols;
    int levels; /* 0: dense */
    size_t width; /* a sequence's values per step (>= 1) */
    FlDType dtype;
    bool label, normalize, has_scale;
    double scale;
} Feed;

/* A sequence feed's rows: vals[0..nvals) one row after the other (double or int64_t in a source,
 * the feed's dtype in a dataset) and L levels of offsets, outermost first: off[0] has rows + 1
 * entries, each row's first entry of the next level (its first value when L is 1, its first
 * sub-sequence when L is 2); with L = 2, off[1] has (sub-sequences + 1) entries, each
 * sub-sequence's first value. */
typedef struct Seq {
    unsigned char *vals;
    size_t nvals, capvals;
    int64_t *off[FL_DATA_MAX_LEVELS];
    size_t noff[FL_DATA_MAX_LEVELS], capoff[FL_DATA_MAX_LEVELS];
} Seq;

struct FlDataSource {
    char *path; /* the file read, as opened */
    Feed *feeds;
    size_t nfeeds;
    size_t nrows, cap; /* cap: rows the raw arrays have room for */
    size_t *line;      /* per row: its 1-based line in the file */
    void **raw;        /* per dense feed: double or int64_t [rows, ncols] */
    Seq *seq;          /* per feed: the rows of a sequence feed (unused for dense feeds) */
};

struct FlDataset {
    char *path; /* the file its rows came from */
    Feed *feeds;
    size_t nfeeds;
    size_t nrows;
    size_t *origin;       /* per row: its source row */
    size_t *line;         /* per row: its 1-based line in the file */
    double **mean, **std; /* per feed: [ncols], NULL unless the feed is normalised */
    unsigned char **data; /* per dense feed: [nrows, ncols] in the feed's dtype */
    Seq *seq;             /* per feed: the rows of a sequence feed (unused for dense feeds) */
};

struct FlDataEpoch {
    const FlDataset *ds;
    size_t trainers, global, nbatches;
    size_t *order;
};

/* ---- feeds ---- */

static bool is_float(FlDType t) { return t == FL_DT_FLOAT32 || t == FL_DT_FLOAT64; }
/* An integer feed (int64, or int32 as detection programs declare their labels): parsed and kept
 * raw as int64, an int32 one checked to fit when parsed. */
static bool is_int(FlDType t) { return t == FL_DT_INT64 || t == FL_DT_INT32; }

static void feeds_free(Feed *f, size_t n) {
    if (!f) return;
    for (size_t i = 0; i < n; i++) {
        free(f[i].name);
        free(f[i].cols);
    }
    free(f);
}

static Feed feed_copy(const char *name, const size_t *cols, size_t ncols, int levels, size_t width) {
    Feed f = {.name = fl_xstrdup(name), .ncols = ncols, .levels = levels, .width = width ? width : 1};
    f.cols = fl_xmalloc(fl_mul_size(ncols, sizeof *cols));
    memcpy(f.cols, cols, ncols * sizeof *cols);
    return f;
}

static void seqs_free(Seq *q, size_t n) {
    if (!q) return;
    for (size_t i = 0; i < n; i++) {
        free(q[i].vals);
        for (int k = 0; k < FL_DATA_MAX_LEVELS; k++) free(q[i].off[k]);
    }
    free(q);
}

/* Makes room for `need` elements of `elem` bytes in *p (capacity *cap, doubling); false when the
 * memory runs out (data-sized arrays are an error, not an abort). */
static bool reserve(void **p, size_t *cap, size_t need, size_t elem) {
    if (need <= *cap) return true;
    size_t c = *cap ? *cap : 64;
    while (c < need) {
        if (c > SIZE_MAX / 2 / elem) return false;
        c *= 2;
    }
    void *q = realloc(*p, c * elem);
    if (!q) return false;
    *p = q;
    *cap = c;
    return true;
}

/* Appends offset v to level k of q. */
static bool push_off(Seq *q, int k, int64_t v) {
    if (!reserve((void **)&q->off[k], &q->capoff[k], q->noff[k] + 1, sizeof(int64_t))) return false;
    q->off[k][q->noff[k]++] = v;
    return true;
}

static FlStatus check_spec(const FlDataSpec *spec, FlErr *e) {
    if (!spec->path || !spec->path[0]) return fl_err(e, "io.csv: the path is empty");
    if (spec->sep == '\n' || spec->sep == '\r')
        return fl_err(e, "io.csv: the separator cannot be a line break");
    if (spec->nfeeds == 0) return fl_err(e, "io.csv: no columns given");
    for (size_t i = 0; i < spec->nfeeds; i++) {
        const FlDataFeed *f = &spec->feeds[i];
        if (!f->name || !f->name[0]) return fl_err(e, "io.csv: a feed has an empty name");
        for (size_t j = 0; j < i; j++)
            if (strcmp(spec->feeds[j].name, f->name) == 0)
                return fl_err(e, "io.csv: feed '%s' is given twice", f->name);
        if (f->ncols == 0) return fl_err(e, "io.csv: feed '%s' has no columns", f->name);
        if (f->levels < 0 || f->levels > FL_DATA_MAX_LEVELS)
            return fl_err(e, "io.csv: feed '%s' has %d sequence levels; at most %d", f->name,
                          f->levels, FL_DATA_MAX_LEVELS);
        if (f->levels && f->ncols != 1)
            return fl_err(e, "io.csv: sequence feed '%s' has %zu columns; it reads one", f->name,
                          f->ncols);
        if (f->levels && (spec->sep == ' ' || spec->sep == '\t'))
            return fl_err(e, "io.csv: feed '%s' is a sequence of blank-separated numbers; the "
                             "separator cannot be a blank", f->name);
        if (f->levels == 2 && spec->sep == '|')
            return fl_err(e, "io.csv: feed '%s' is a nested sequence, whose sub-sequences "
                             "'|' separates; the separator cannot be '|'", f->name);
        if (f->width > 1 && f->levels != 1)
            return fl_err(e, "io.csv: feed '%s' has steps of %zu values; only a sequence of one level may", f->name,
                          f->width);
        if (f->levels && f->normalize)
            return fl_err(e, "io.csv: feed '%s' is a sequence and cannot be normalised", f->name);
        if (!is_float(f->dtype) && !is_int(f->dtype))
            return fl_err(e, "io.csv: feed '%s' has dtype %s; expected float32, float64, int32 or int64",
                          f->name, fl_dtype_name(f->dtype));
        if (f->normalize && !is_float(f->dtype))
            return fl_err(e, "io.csv: feed '%s' is %s and cannot be normalised", f->name,
                          fl_dtype_name(f->dtype));
        if (f->has_scale && !is_float(f->dtype))
            return fl_err(e, "io.csv: feed '%s' is %s and cannot be scaled", f->name,
                          fl_dtype_name(f->dtype));
        if (f->has_scale && !isfinite(f->scale))
            return fl_err(e, "io.csv: feed '%s' has a scale that is not a finite number", f->name);
    }
    return FL_OK;
}

/* ---- the PRNG: splitmix64, Fisher-Yates with rejection sampling ---- */

enum { STREAM_SPLIT = 1, STREAM_SHUFFLE = 2 };

static uint64_t mix64(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9u;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBu;
    return z ^ (z >> 31);
}

static uint64_t next64(uint64_t *s) {
    *s += 0x9E3779B97F4A7C15u;
    return mix64(*s);
}

/* Uniform in [0, n), n > 0: rejecting the 2^64 mod n lowest values removes the modulo bias. */
static uint64_t below(uint64_t *s, uint64_t n) {
    uint64_t lim = (0 - n) % n;
    for (;;) {
        uint64_t r = next64(s);
        if (r >= lim) return r % n;
    }
}

/* order[0..n) = a permutation of 0..n-1 determined by (seed, stream, index) alone. */
static void perm(size_t *order, size_t n, uint64_t seed, uint64_t stream, uint64_t index) {
    uint64_t s = mix64(mix64(seed + stream * 0xD1B54A32D192ED03u) ^ index);
    for (size_t i = 0; i < n; i++) order[i] = i;
    for (size_t i = n; i > 1; i--) {
        size_t j = (size_t)below(&s, i);
        size_t t = order[i - 1];
        order[i - 1] = order[j];
        order[j] = t;
    }
}

/* ---- reading lines ---- */

enum { CHUNK = 1 << 16 };

typedef struct Reader {
    gzFile f;
    const char *path;
    char *buf;
    size_t cap, len;
    size_t line;                /* 1-based number of the line in buf */
    unsigned char *chunk;       /* CHUNK bytes read ahead: chunk[pos, end) */
    size_t pos, end;
    bool eof;
} Reader;

static FlStatus read_error(Reader *r, FlErr *e) {
    int errnum = Z_OK;
    const char *msg = gzerror(r->f, &errnum);
    if (errnum == Z_ERRNO) return fl_err(e, "cannot read '%s': %s", r->path, strerror(errno));
    size_t n = strlen(r->path); /* zlib puts "path: " in front of its message */
    if (strncmp(msg, r->path, n) == 0 && strncmp(msg + n, ": ", 2) == 0) msg += n + 2;
    return fl_err(e, "cannot read '%s': %s", r->path, msg);
}

/* Reads the next line into r->buf without its line break. *got is false at the end of file. A
 * NUL byte is an error (a text file has none; it would end the line's string early). */
static FlStatus read_line(Reader *r, bool *got, FlErr *e) {
    r->len = 0;
    *got = false;
    bool any = false;
    for (;;) {
        if (r->pos == r->end) {
            if (r->eof) break;
            if (!r->chunk) r->chunk = fl_xmalloc(CHUNK);
            int n = gzread(r->f, r->chunk, CHUNK);
            if (n < 0) return read_error(r, e);
            if (n == 0) {
                int errnum = Z_OK;
                gzerror(r->f, &errnum); /* a stream cut short */
                if (errnum != Z_OK) return read_error(r, e);
                r->eof = true;
                break;
            }
            r->pos = 0;
            r->end = (size_t)n;
        }
        any = true;
        const unsigned char *s = r->chunk + r->pos;
        size_t avail = r->end - r->pos;
        const unsigned char *nl = memchr(s, '\n', avail);
        size_t take = nl ? (size_t)(nl - s) : avail;
        const unsigned char *nul = memchr(s, 0, take);
        if (nul)
            return fl_err(e, "%s:%zu: a NUL byte (byte column %zu); a CSV file holds text", r->path, r->line + 1,
                          r->len + (size_t)(nul - s) + 1);
        if (r->cap - r->len < take + 2) fl_grow((void **)&r->buf, &r->cap, r->len + take + 2, 1);
        memcpy(r->buf + r->len, s, take);
        r->len += take;
        r->pos += take + (nl != NULL);
        if (nl) break;
    }
    if (!any) return FL_OK; /* end of file */
    while (r->len > 0 && r->buf[r->len - 1] == '\r') r->len--;
    r->buf[r->len] = 0;
    r->line++;
    *got = true;
    return FL_OK;
}

/* ---- parsing ---- */

static bool is_blank(char c) { return c == ' ' || c == '\t'; }

typedef struct Field {
    size_t start, end; /* byte offsets in the line */
} Field;

static void quote(char *dst, size_t cap, const char *s, size_t n) {
    if (n + 1 <= cap) {
        memcpy(dst, s, n);
        dst[n] = 0;
    } else {
        memcpy(dst, s, cap - 4);
        memcpy(dst + cap - 4, "...", 4);
    }
}

/* The common plain decimal ("-12.375", "0.5", "7"; an optional sign, at most 19 digits with at
 * most 22 after the point, no exponent), NUL-terminated, converted exactly as strtod does it: the
 * digits are an integer m <= 2^53 and 10^k (k <= 22) is exact in a double, so m / 10^k is one
 * correctly rounded division (Clinger's fast path). False (nothing set) for any other text,
 * which strtod_l then parses. */
static bool fast_decimal(const char *s, double *out) {
    static const double pow10[23] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                     1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                     1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
    bool neg = *s == '-';
    if (*s == '-' || *s == '+') s++;
    uint64_t m = 0;
    int digits = 0, frac = 0;
    for (; *s >= '0' && *s <= '9'; s++, digits++) m = m * 10 + (uint64_t)(*s - '0');
    if (*s == '.')
        for (s++; *s >= '0' && *s <= '9'; s++, digits++, frac++) m = m * 10 + (uint64_t)(*s - '0');
    if (*s || digits == 0 || digits > 19 || frac > 22 || m > (UINT64_C(1) << 53)) return false;
    double v = (double)m / pow10[frac];
    *out = neg ? -v : v;
    return true;
}

/* Parses the field text s (NUL-terminated, trimmed, not empty) for feed f. */
static FlStatus parse_value(const Reader *r, size_t col0, const Feed *f, size_t c, char *s,
                            locale_t loc, double *dv, int64_t *iv, FlErr *e) {
    if (!is_int(f->dtype) && fast_decimal(s, dv)) return FL_OK;
    char text[64];
    size_t n = strlen(s);
    quote(text, sizeof text, s, n);
    if (is_int(f->dtype)) {
        char *end;
        errno = 0;
        long long v = strtoll(s, &end, 10);
        if (end == s + n && errno == 0 && (f->dtype == FL_DT_INT64 || (v >= INT32_MIN && v <= INT32_MAX))) {
            *iv = v;
            return FL_OK;
        }
    }
    char *end;
    double v = strtod_l(s, &end, loc);
    if (end != s + n || isnan(v))
        return fl_err(e, "%s:%zu:%zu: '%s' is not a number (column %zu, feed '%s')", r->path,
                      r->line, col0 + 1, text, f->cols[c], f->name);
    if (!isfinite(v))
        return fl_err(e, "%s:%zu:%zu: '%s' is out of range (column %zu, feed '%s')", r->path,
                      r->line, col0 + 1, text, f->cols[c], f->name);
    if (f->dtype == FL_DT_FLOAT32 && fabs(v) > FLT_MAX)
        return fl_err(e, "%s:%zu: column %zu: value '%s' is out of float32 range (feed '%s')", r->path, r->line,
                      f->cols[c], text, f->name);
    if (is_int(f->dtype)) {
        if (v != floor(v))
            return fl_err(e, "%s:%zu:%zu: '%s' is not an integer (column %zu, feed '%s' is %s)",
                          r->path, r->line, col0 + 1, text, f->cols[c], f->name, fl_dtype_name(f->dtype));
        double lim = f->dtype == FL_DT_INT32 ? 2147483648.0 : 9223372036854775808.0;
        if (v < -lim || v >= lim)
            return fl_err(e, "%s:%zu:%zu: '%s' is out of range (column %zu, feed '%s' is %s)",
                          r->path, r->line, col0 + 1, text, f->cols[c], f->name, fl_dtype_name(f->dtype));
        *iv = (int64_t)v;
    } else {
        *dv = v;
    }
    return FL_OK;
}

/* Prefaults the pages of the large array p[0..bytes) in one call (MADV_POPULATE_WRITE) instead
 * of one page fault per 4 KiB page on first touch: loading the MLP bench's 2,624 rows of 784
 * columns (25 MB of arrays) took 170 ms of CPU with a fault per page, 40 ms with the pages
 * already mapped, on the development machine (a VM where a fault costs ~20 us). Only a hint: a
 * kernel without it (before Linux 5.14) faults them in as before. */
static void prefault(void *p, size_t bytes) {
#ifdef MADV_POPULATE_WRITE
    enum { MIN = 1u << 20 };
    uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t lo = ((uintptr_t)p + pg - 1) & ~(pg - 1), hi = ((uintptr_t)p + bytes) & ~(pg - 1);
    if (bytes >= MIN && hi > lo) (void)madvise((void *)lo, hi - lo, MADV_POPULATE_WRITE);
#else
    (void)p, (void)bytes;
#endif
}

/* Does feed f keep its raw values as float? A float32 feed that is neither normalised nor
 * scaled: materialize would only round each double to float, so the parser does it once, as it
 * stores the value ((float) of the same double: the same bits), and half the memory is touched.
 * The others keep doubles (the statistics and the scaling work on the parsed doubles). */
static bool raw_is_f32(const Feed *f) {
    return f->dtype == FL_DT_FLOAT32 && !f->normalize && !f->has_scale;
}

/* Makes room for one more row in every raw array. */
static FlStatus grow_rows(FlDataSource *src, const char *path, FlErr *e) {
    if (src->nrows < src->cap) return FL_OK;
    size_t cap = src->cap ? src->cap * 2 : 256;
    if (cap > SIZE_MAX / 2 / sizeof *src->line) return fl_err(e, "%s: too many rows", path);
    size_t *line = realloc(src->line, cap * sizeof *src->line);
    if (!line) return fl_err(e, "%s: out of memory after %zu rows", path, src->nrows);
    src->line = line;
    for (size_t i = 0; i < src->nfeeds; i++) {
        if (src->feeds[i].levels) continue; /* its values are in src->seq[i] */
        /* double and int64_t are both 8 bytes; float 4 */
        size_t per = src->feeds[i].ncols * (raw_is_f32(&src->feeds[i]) ? 4 : 8);
        if (cap > SIZE_MAX / 2 / per) return fl_err(e, "%s: too many rows", path);
        void *p = realloc(src->raw[i], cap * per);
        if (!p) return fl_err(e, "%s: out of memory after %zu rows", path, src->nrows);
        prefault((unsigned char *)p + src->cap * per, (cap - src->cap) * per);
        src->raw[i] = p;
    }
    src->cap = cap;
    return FL_OK;
}

/* Parses the sequence field line[fd.start, fd.end) of sequence feed i and appends it to
 * src->seq[i] as one more row: numbers separated by blanks, with 2 levels sub-sequences
 * separated by '|'. The row and each sub-sequence must hold a number. */
static FlStatus parse_seq(FlDataSource *src, size_t i, const Reader *r, char *line, Field fd,
                          locale_t loc, FlErr *e) {
    const Feed *f = &src->feeds[i];
    Seq *q = &src->seq[i];
    int last = f->levels - 1; /* the level whose offsets cut the values */
    size_t s = fd.start, t = fd.end;
    while (s < t && is_blank(line[s])) s++;
    while (t > s && is_blank(line[t - 1])) t--;
    if (s == t)
        return fl_err(e, "%s:%zu:%zu: empty sequence (column %zu, feed '%s')", r->path, r->line,
                      fd.start + 1, f->cols[0], f->name);
    if (q->noff[0] == 0)
        for (int k = 0; k < f->levels; k++)
            if (!push_off(q, k, 0)) goto oom;
    size_t in_sub = 0, bar = 0; /* values in the current sub-sequence; the last '|' seen + 1 */
    for (size_t k = s;;) {
        if (k == t || line[k] == '|') {
            if (k < t && f->levels == 1)
                return fl_err(e, "%s:%zu:%zu: '|' in a sequence of one level (column %zu, feed '%s'; "
                                 "nested sequences need io.sequence(%zu, levels=2))",
                              r->path, r->line, k + 1, f->cols[0], f->name, f->cols[0]);
            if (f->levels == 2) {
                if (in_sub == 0) {
                    if (k < t)
                        return fl_err(e, "%s:%zu:%zu: empty sub-sequence before '|' (column %zu, feed '%s')",
                                      r->path, r->line, k + 1, f->cols[0], f->name);
                    return fl_err(e, "%s:%zu:%zu: empty sub-sequence after '|' (column %zu, feed '%s')",
                                  r->path, r->line, bar, f->cols[0], f->name);
                }
                if (!push_off(q, 1, (int64_t)q->nvals)) goto oom;
                in_sub = 0;
            }
            if (k == t) break;
            bar = ++k;
            continue;
        }
        if (is_blank(line[k])) {
            k++;
            continue;
        }
        size_t a = k;
        while (k < t && !is_blank(line[k]) && line[k] != '|') k++;
        char saved = line[k];
        line[k] = 0;
        double dv = 0;
        int64_t iv = 0;
        FlStatus ps = parse_value(r, a, f, 0, line + a, loc, &dv, &iv, e);
        line[k] = saved;
        if (ps != FL_OK) return FL_ERROR;
        if (!reserve((void **)&q->vals, &q->capvals, q->nvals + 1, 8)) goto oom;
        if (is_int(f->dtype))
            memcpy(q->vals + q->nvals * 8, &iv, 8);
        else
            memcpy(q->vals + q->nvals * 8, &dv, 8);
        q->nvals++;
        in_sub++;
    }
    size_t in_row = q->nvals - (size_t)q->off[0][q->noff[0] - 1];
    if (!last && in_row % f->width != 0)
        return fl_err(e, "%s:%zu:%zu: the sequence holds %zu numbers, not a multiple of %zu, the values of one step "
                         "(column %zu, feed '%s')",
                      r->path, r->line, s + 1, in_row, f->width, f->cols[0], f->name);
    if (push_off(q, 0, last ? (int64_t)q->noff[last] - 1 : (int64_t)q->nvals)) return FL_OK;
oom:
    return fl_err(e, "%s: out of memory after %zu rows", r->path, src->nrows);
}

static bool has_suffix(const char *s, const char *suffix) {
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

/* Reads `path` into src, whose feeds are set and raw arrays empty. */
static FlStatus load(FlDataSource *src, const char *path, size_t skip_rows, char sep, FlErr *e) {
    FlStatus st = FL_ERROR;
    Reader r = {.path = path};
    FL_VEC(Field) fields = {0};
    size_t want = 0; /* the column count of the first data row */
    if (!sep) sep = ',';
    locale_t loc = newlocale(LC_ALL_MASK, "C", (locale_t)0);
    if (loc == (locale_t)0) {
        fl_err(e, "%s: cannot create the C locale: %s", path, strerror(errno));
        goto fail;
    }
    errno = 0;
    r.f = gzopen(path, "rb");
    if (!r.f) {
        fl_err(e, "cannot open '%s': %s", path, errno ? strerror(errno) : "out of memory");
        goto fail;
    }
    if (has_suffix(path, ".gz") && gzdirect(r.f)) {
        fl_err(e, "%s: not a gzip file (the name ends in .gz)", path);
        goto fail;
    }
    bool got;
    for (size_t i = 0; i < skip_rows; i++) {
        if (read_line(&r, &got, e) != FL_OK) goto fail;
        if (!got) break;
    }
    for (;;) {
        if (read_line(&r, &got, e) != FL_OK) goto fail;
        if (!got) break;
        char *line = r.buf;
        size_t k = 0;
        while (k < r.len && is_blank(line[k])) k++;
        if (k == r.len) continue; /* a blank line */
        fields.len = 0;
        for (size_t s = 0;;) {
            char *p = memchr(line + s, sep, r.len - s);
            size_t end = p ? (size_t)(p - line) : r.len;
            FL_VEC_PUSH(&fields, ((Field){s, end}));
            if (!p) break;
            s = end + 1;
        }
        if (src->nrows == 0) {
            want = fields.len;
            for (size_t i = 0; i < src->nfeeds; i++)
                for (size_t c = 0; c < src->feeds[i].ncols; c++)
                    if (src->feeds[i].cols[c] >= want) {
                        fl_err(e,
                               "%s:%zu: feed '%s' uses column %zu, but the rows have %zu columns",
                               path, r.line, src->feeds[i].name, src->feeds[i].cols[c], want);
                        goto fail;
                    }
        } else if (fields.len != want) {
            fl_err(e, "%s:%zu: expected %zu columns, found %zu", path, r.line, want, fields.len);
            goto fail;
        }
        if (grow_rows(src, path, e) != FL_OK) goto fail;
        for (size_t i = 0; i < src->nfeeds; i++) {
            const Feed *f = &src->feeds[i];
            if (f->levels) {
                if (parse_seq(src, i, &r, line, fields.data[f->cols[0]], loc, e) != FL_OK) goto fail;
                continue;
            }
            for (size_t c = 0; c < f->ncols; c++) {
                Field fd = fields.data[f->cols[c]];
                size_t s = fd.start, t = fd.end;
                while (s < t && is_blank(line[s])) s++;
                while (t > s && is_blank(line[t - 1])) t--;
                if (s == t) {
                    fl_err(e, "%s:%zu:%zu: empty field (column %zu, feed '%s')", path, r.line,
                           fd.start + 1, f->cols[c], f->name);
                    goto fail;
                }
                char saved = line[t];
                line[t] = 0;
                size_t at = src->nrows * f->ncols + c;
                double dv = 0;
                int64_t iv = 0;
                FlStatus ps = parse_value(&r, s, f, c, line + s, loc, &dv, &iv, e);
                line[t] = saved;
                if (ps != FL_OK) goto fail;
                if (is_int(f->dtype))
                    ((int64_t *)src->raw[i])[at] = iv;
                else if (raw_is_f32(f))
                    ((float *)src->raw[i])[at] = (float)dv;
                else
                    ((double *)src->raw[i])[at] = dv;
            }
        }
        src->line[src->nrows++] = r.line;
    }
    if (src->nrows == 0) {
        if (skip_rows)
            fl_err(e, "%s: no data rows after the %zu skipped rows", path, skip_rows);
        else
            fl_err(e, "%s: no data rows", path);
        goto fail;
    }
    st = FL_OK;
fail:
    if (r.f) gzclose(r.f);
    if (loc != (locale_t)0) freelocale(loc);
    free(r.buf);
    free(r.chunk);
    FL_VEC_FREE(&fields);
    return st;
}

static FlDataSource *source_new(const char *path, Feed *feeds_take, size_t nfeeds) {
    FlDataSource *src = fl_xcalloc(1, sizeof *src);
    src->feeds = feeds_take;
    src->nfeeds = nfeeds;
    src->raw = fl_xcalloc(nfeeds, sizeof *src->raw);
    src->seq = fl_xcalloc(nfeeds, sizeof *src->seq);
    src->path = fl_xstrdup(path);
    return src;
}

void fl_data_source_free(FlDataSource *src) {
    if (!src) return;
    for (size_t i = 0; i < src->nfeeds; i++) free(src->raw[i]);
    free(src->raw);
    seqs_free(src->seq, src->nfeeds);
    feeds_free(src->feeds, src->nfeeds);
    free(src->line);
    free(src->path);
    free(src);
}

char *fl_data_path(const char *base_dir, const char *path) {
    if (!base_dir || !base_dir[0] || path[0] == '/') return fl_xstrdup(path);
    size_t n = strlen(base_dir);
    bool slash = base_dir[n - 1] == '/';
    size_t len = n + !slash + strlen(path) + 1;
    char *s = fl_xmalloc(len);
    snprintf(s, len, "%s%s%s", base_dir, slash ? "" : "/", path);
    return s;
}

FlStatus fl_data_source_load(const FlDataSpec *spec, const char *base_dir, FlDataSource **out,
                             FlErr *e) {
    *out = NULL;
    if (check_spec(spec, e) != FL_OK) return FL_ERROR;
    Feed *feeds = fl_xcalloc(spec->nfeeds, sizeof *feeds);
    for (size_t i = 0; i < spec->nfeeds; i++) {
        const FlDataFeed *sf = &spec->feeds[i];
        feeds[i] = feed_copy(sf->name, sf->cols, sf->ncols, sf->levels, sf->width);
        feeds[i].dtype = sf->dtype;
        feeds[i].label = sf->label;
        feeds[i].normalize = sf->normalize;
        feeds[i].has_scale = sf->has_scale;
        feeds[i].scale = sf->scale;
    }
    char *path = fl_data_path(base_dir, spec->path);
    FlDataSource *src = source_new(path, feeds, spec->nfeeds);
    free(path);
    FlStatus st = load(src, src->path, spec->skip_rows, spec->sep, e);
    if (st != FL_OK) {
        fl_data_source_free(src);
        return FL_ERROR;
    }
    *out = src;
    return FL_OK;
}

size_t fl_data_source_rows(const FlDataSource *src) { return src->nrows; }

/* ---- datasets ---- */

void fl_data_free(FlDataset *ds) {
    if (!ds) return;
    for (size_t i = 0; i < ds->nfeeds; i++) {
        free(ds->mean[i]);
        free(ds->std[i]);
        free(ds->data[i]);
    }
    free(ds->mean);
    free(ds->std);
    free(ds->data);
    free(ds->origin);
    free(ds->line);
    free(ds->path);
    seqs_free(ds->seq, ds->nfeeds);
    feeds_free(ds->feeds, ds->nfeeds);
    free(ds);
}

/* Mean and population std of each column of feed i over the given source rows. A column whose
 * std is zero or lost in the rounding of its mean gets std 0 (it is then only centred). */
static void stats(const FlDataSource *src, size_t i, const size_t *rows, size_t n, double *mean,
                  double *std) {
    size_t nc = src->feeds[i].ncols;
    const double *raw = src->raw[i];
    for (size_t c = 0; c < nc; c++) {
        double sum = 0, sq = 0;
        for (size_t k = 0; k < n; k++) sum += raw[rows[k] * nc + c];
        double m = n ? sum / (double)n : 0;
        for (size_t k = 0; k < n; k++) {
            double d = raw[rows[k] * nc + c] - m;
            sq += d * d;
        }
        double sd = n ? sqrt(sq / (double)n) : 0;
        if (sd <= 1e-12 * fabs(m)) sd = 0;
        mean[c] = m;
        std[c] = sd;
    }
}

/* The sizes of rows[0..n) of a sequence with `levels` levels (see fl_data_seq_sizes). */
static void seq_sizes(const Seq *q, int levels, const size_t *rows, size_t n,
                      size_t sizes[FL_DATA_MAX_LEVELS + 1]) {
    size_t units = 0, vals = 0;
    for (size_t k = 0; k < n; k++) {
        int64_t u0 = q->off[0][rows[k]], u1 = q->off[0][rows[k] + 1];
        units += (size_t)(u1 - u0);
        if (levels == 2) vals += (size_t)(q->off[1][u1] - q->off[1][u0]);
    }
    sizes[0] = n;
    sizes[1] = units;
    if (levels == 2) sizes[2] = vals;
}

/* Packs rows[0..n) of q (values of es bytes) into vals and the offsets lod[0..levels) (see
 * fl_data_fill_seq); the sizes are those seq_sizes gives. */
static void seq_gather(const Seq *q, int levels, size_t es, const size_t *rows, size_t n,
                       unsigned char *vals, int64_t *const *lod) {
    size_t nv = 0, nu = 0;
    lod[0][0] = 0;
    if (levels == 2) lod[1][0] = 0;
    for (size_t k = 0; k < n; k++) {
        int64_t u0 = q->off[0][rows[k]], u1 = q->off[0][rows[k] + 1], v0 = u0, v1 = u1;
        if (levels == 2) {
            v0 = q->off[1][u0];
            v1 = q->off[1][u1];
            for (int64_t u = u0; u < u1; u++, nu++)
                lod[1][nu + 1] = lod[1][nu] + (q->off[1][u + 1] - q->off[1][u]);
            lod[0][k + 1] = (int64_t)nu;
        } else {
            lod[0][k + 1] = (int64_t)nv + (v1 - v0);
        }
        memcpy(vals + nv * es, q->vals + (size_t)v0 * es, (size_t)(v1 - v0) * es);
        nv += (size_t)(v1 - v0);
    }
}

/* A value that normalising or scaling took out of its feed's dtype's range (a float32 feed: beyond
 * FLT_MAX): an error at the row's line, not an inf that shows later as a diverged loss. raw is
 * the file's value, v what it became; mu and sd the statistics when the feed is normalised. */
static FlStatus out_of_range(const char *path, size_t line, const Feed *f, size_t c, double raw, double v,
                             const double *mu, const double *sd, FlErr *e) {
    char how[160] = "";
    if (mu) snprintf(how, sizeof how, " normalised with mean %g and std %g", mu[c], sd[c]);
    if (f->has_scale) {
        size_t n = strlen(how);
        snprintf(how + n, sizeof how - n, "%s scaled by %g", mu ? " and" : "", f->scale);
    }
    return fl_err(e, "%s:%zu: column %zu: value %g%s is %g, out of %s range (feed '%s')", path, line, f->cols[c], raw,
                  how, v, fl_dtype_name(f->dtype), f->name);
}

/* The row (of the packed rows d) that holds value k of a sequence of `levels` levels. */
static size_t seq_row_of(const Seq *d, int levels, size_t k) {
    size_t u = k, r = 0;
    if (levels == 2)
        for (u = 0; (size_t)d->off[1][u + 1] <= k; u++) {}
    while ((size_t)d->off[0][r + 1] <= u) r++;
    return r;
}

/* The largest magnitude of a float feed's dtype. */
static double dtype_max(FlDType t) { return t == FL_DT_FLOAT32 ? FLT_MAX : DBL_MAX; }

/* d = rows[0..n) of the source sequence q of feed f (of src), in f's dtype and scaled. */
static FlStatus seq_materialize(const FlDataSource *src, const Seq *q, const Feed *f, const size_t *rows, size_t n,
                                Seq *d, FlErr *e) {
    size_t sizes[FL_DATA_MAX_LEVELS + 1];
    seq_sizes(q, f->levels, rows, n, sizes);
    size_t nv = sizes[f->levels], es = fl_dtype_size(f->dtype);
    unsigned char *raw = NULL;
    for (int k = 0; k < f->levels; k++) {
        d->noff[k] = d->capoff[k] = sizes[k] + 1;
        if (!(d->off[k] = malloc(d->noff[k] * sizeof(int64_t)))) return fl_err(e, "out of memory for a dataset of %zu rows", n);
    }
    d->nvals = d->capvals = nv;
    if (nv > SIZE_MAX / 8 || !(d->vals = malloc(nv ? nv * es : 1)) || !(raw = malloc(nv ? nv * 8 : 1))) {
        free(raw);
        return fl_err(e, "out of memory for a dataset of %zu rows", n);
    }
    seq_gather(q, f->levels, 8, rows, n, raw, d->off);
    for (size_t k = 0; k < nv; k++) {
        if (is_int(f->dtype)) {
            int64_t iv;
            memcpy(&iv, raw + k * 8, 8);
            if (f->dtype == FL_DT_INT64)
                ((int64_t *)d->vals)[k] = iv;
            else
                ((int32_t *)d->vals)[k] = (int32_t)iv; /* fits: parse_value */
            continue;
        }
        double v, x;
        memcpy(&x, raw + k * 8, 8);
        v = f->has_scale ? x * f->scale : x;
        if (!(fabs(v) <= dtype_max(f->dtype))) {
            free(raw);
            return out_of_range(src->path, src->line[rows[seq_row_of(d, f->levels, k)]], f, 0, x, v, NULL, NULL, e);
        }
        if (f->dtype == FL_DT_FLOAT32)
            ((float *)d->vals)[k] = (float)v;
        else
            ((double *)d->vals)[k] = v;
    }
    free(raw);
    return FL_OK;
}

/* The dataset of src's rows[0..n). mean/std: per source feed, the statistics to normalise with
 * (NULL entries for feeds not normalised); they are copied. take:
 * NULL, or src itself when rows are 0..n-1 in order and src is freed next: then the raw arrays
 * that already have the dataset's layout (int64 feeds, float feeds kept as float) move into the
 * dataset instead of being copied. */
static FlStatus materialize(const FlDataSource *src, const size_t *rows, size_t n,
                            double *const *mean, double *const *std, FlDataSource *take,
                            FlDataset **out, FlErr *e) {
    FlDataset *ds = fl_xcalloc(1, sizeof *ds);
    ds->nfeeds = src->nfeeds;
    ds->nrows = n;
    ds->feeds = fl_xcalloc(src->nfeeds, sizeof *ds->feeds);
    ds->mean = fl_xcalloc(src->nfeeds, sizeof *ds->mean);
    ds->std = fl_xcalloc(src->nfeeds, sizeof *ds->std);
    ds->data = fl_xcalloc(src->nfeeds, sizeof *ds->data);
    ds->seq = fl_xcalloc(src->nfeeds, sizeof *ds->seq);
    for (size_t i = 0; i < src->nfeeds; i++) {
        const Feed *sf = &src->feeds[i];
        Feed f = feed_copy(sf->name, sf->cols, sf->ncols, sf->levels, sf->width);
        f.dtype = sf->dtype;
        f.label = sf->label;
        f.normalize = sf->normalize;
        f.has_scale = sf->has_scale;
        f.scale = sf->scale;
        ds->feeds[i] = f;
    }
    ds->path = fl_xstrdup(src->path);
    ds->origin = malloc(n ? n * sizeof *ds->origin : 1);
    ds->line = malloc(n ? n * sizeof *ds->line : 1);
    if (!ds->origin || !ds->line) goto oom;
    memcpy(ds->origin, rows, n * sizeof *rows);
    for (size_t k = 0; k < n; k++) ds->line[k] = src->line[rows[k]];
    for (size_t i = 0; i < src->nfeeds; i++) {
        const Feed *f = &ds->feeds[i];
        size_t nc = f->ncols, es = fl_dtype_size(f->dtype);
        if (f->levels) {
            if (seq_materialize(src, &src->seq[i], f, rows, n, &ds->seq[i], e) != FL_OK) goto fail;
            continue;
        }
        if (f->normalize) {
            FL_ASSERT(mean[i] && std[i]);
            ds->mean[i] = fl_xmalloc(nc * sizeof(double));
            ds->std[i] = fl_xmalloc(nc * sizeof(double));
            memcpy(ds->mean[i], mean[i], nc * sizeof(double));
            memcpy(ds->std[i], std[i], nc * sizeof(double));
        }
        if (take && take->raw[i] && n && (f->dtype == FL_DT_INT64 || raw_is_f32(f))) {
            void *p = realloc(take->raw[i], n * nc * es); /* gives back the rows grown beyond n */
            ds->data[i] = p ? p : take->raw[i];
            take->raw[i] = NULL;
            continue;
        }
        if (f->dtype == FL_DT_INT32) { /* raw int64 values, each fitting int32 (parse_value) */
            const int64_t *raw = src->raw[i];
            int32_t *d = malloc(n ? n * nc * es : 1);
            if (!d) goto oom;
            ds->data[i] = (unsigned char *)d;
            for (size_t k = 0; k < n; k++)
                for (size_t c = 0; c < nc; c++) d[k * nc + c] = (int32_t)raw[rows[k] * nc + c];
            continue;
        }
        ds->data[i] = malloc(n ? n * nc * es : 1);
        if (!ds->data[i]) goto oom;
        prefault(ds->data[i], n * nc * es);
        if (f->dtype == FL_DT_INT64 || raw_is_f32(f)) { /* the raw rows have the dataset's layout */
            const char *raw = src->raw[i];
            unsigned char *d = ds->data[i];
            for (size_t k = 0; k < n; k++) memcpy(d + k * nc * es, raw + rows[k] * nc * es, nc * es);
            continue;
        }
        /* locals: the stores below cannot alias them, so the loop keeps them in registers */
        const double *raw = src->raw[i], *mu = ds->mean[i], *sd = ds->std[i];
        bool norm = f->normalize, scaled = f->has_scale, f32 = f->dtype == FL_DT_FLOAT32;
        double scale = f->scale, lim = dtype_max(f->dtype);
        float *d32 = (float *)ds->data[i];
        double *d64 = (double *)ds->data[i];
        for (size_t k = 0; k < n; k++) {
            const double *from = raw + rows[k] * nc;
            for (size_t c = 0; c < nc; c++) {
                double v = from[c];
                if (norm) {
                    v -= mu[c];
                    if (sd[c] > 0) v /= sd[c];
                }
                if (scaled) v *= scale;
                if (!(fabs(v) <= lim)) {
                    out_of_range(src->path, src->line[rows[k]], f, c, from[c], v, mu, sd, e);
                    goto fail;
                }
                if (f32)
                    d32[k * nc + c] = (float)v;
                else
                    d64[k * nc + c] = v;
            }
        }
    }
    *out = ds;
    return FL_OK;
oom:
    fl_err(e, "out of memory for a dataset of %zu rows", n);
fail:
    fl_data_free(ds);
    return FL_ERROR;
}

static int cmp_size(const void *a, const void *b) {
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return (x > y) - (x < y);
}

/* Statistics of the normalised feeds over rows[0..n), then the datasets of each row list. */
static FlStatus make_parts(const FlDataSource *src, const size_t *stat_rows, size_t nstat,
                           const size_t *rows[2], const size_t nrows[2], FlDataset **outs[2],
                           FlDataSource *take, FlErr *e) {
    double **mean = fl_xcalloc(src->nfeeds, sizeof *mean);
    double **std = fl_xcalloc(src->nfeeds, sizeof *std);
    FlStatus st = FL_OK;
    for (size_t i = 0; i < src->nfeeds; i++) {
        if (!src->feeds[i].normalize) continue;
        mean[i] = fl_xmalloc(src->feeds[i].ncols * sizeof(double));
        std[i] = fl_xmalloc(src->feeds[i].ncols * sizeof(double));
        stats(src, i, stat_rows, nstat, mean[i], std[i]);
    }
    for (int p = 0; p < 2 && st == FL_OK; p++)
        if (outs[p]) st = materialize(src, rows[p], nrows[p], mean, std, take, outs[p], e);
    if (st != FL_OK)
        for (int p = 0; p < 2; p++)
            if (outs[p]) {
                fl_data_free(*outs[p]);
                *outs[p] = NULL;
            }
    for (size_t i = 0; i < src->nfeeds; i++) {
        free(mean[i]);
        free(std[i]);
    }
    free(mean);
    free(std);
    return st;
}

FlStatus fl_data_split(const FlDataSource *src, double fraction, uint64_t seed, FlDataset **train,
                       FlDataset **test, FlErr *e) {
    if (train) *train = NULL;
    if (test) *test = NULL;
    if (!(fraction > 0 && fraction < 1))
        return fl_err(e, "io.split: the fraction must be between 0 and 1 (exclusive), not %g",
                      fraction);
    size_t n = src->nrows;
    double kk = floor(fraction * (double)n + 0.5);
    size_t k = kk >= (double)n ? n : (size_t)kk;
    if (k == 0)
        return fl_err(e, "io.split: a fraction of %g of %zu rows leaves the training part empty",
                      fraction, n);
    size_t *order = fl_xmalloc(fl_mul_size(n, sizeof *order));
    perm(order, n, seed, STREAM_SPLIT, 0);
    qsort(order, k, sizeof *order, cmp_size);
    qsort(order + k, n - k, sizeof *order, cmp_size);
    const size_t *rows[2] = {order, order + k};
    const size_t nrows[2] = {k, n - k};
    FlDataset **outs[2] = {train, test};
    FlStatus st = make_parts(src, order, k, rows, nrows, outs, NULL, e);
    free(order);
    return st;
}

/* fl_data_whole; take: NULL, or src when it is freed next (materialize). */
static FlStatus whole(const FlDataSource *src, FlDataSource *take, FlDataset **out, FlErr *e) {
    *out = NULL;
    size_t n = src->nrows;
    size_t *order = fl_xmalloc(fl_mul_size(n ? n : 1, sizeof *order));
    for (size_t i = 0; i < n; i++) order[i] = i;
    const size_t *rows[2] = {order, NULL};
    const size_t nrows[2] = {n, 0};
    FlDataset **outs[2] = {out, NULL};
    FlStatus st = make_parts(src, order, n, rows, nrows, outs, take, e);
    free(order);
    return st;
}

FlStatus fl_data_whole(const FlDataSource *src, FlDataset **out, FlErr *e) {
    return whole(src, NULL, out, e);
}

FlStatus fl_data_open(const FlDataSpec *spec, const char *base_dir, FlDataset **out, FlErr *e) {
    *out = NULL;
    FlDataSource *src;
    if (fl_data_source_load(spec, base_dir, &src, e) != FL_OK) return FL_ERROR;
    FlStatus st = FL_ERROR;
    switch (spec->part) {
    case FL_DATA_ALL: st = whole(src, src, out, e); break; /* src is freed below: its arrays move */
    case FL_DATA_TRAIN:
        st = fl_data_split(src, spec->split_fraction, spec->split_seed, out, NULL, e);
        break;
    case FL_DATA_TEST:
        st = fl_data_split(src, spec->split_fraction, spec->split_seed, NULL, out, e);
        break;
    case FL_DATA_PART_COUNT: st = fl_err(e, "io.split: unknown part %d", (int)spec->part); break;
    }
    fl_data_source_free(src);
    return st;
}

FlStatus fl_data_predict_load(const FlDataset *train, const char *path, size_t skip_rows, char sep,
                              FlDataset **out, FlErr *e) {
    *out = NULL;
    if (sep == '\n' || sep == '\r')
        return fl_err(e, "%s: the separator cannot be a line break", path);
    size_t n = 0;
    for (size_t i = 0; i < train->nfeeds; i++) n += !train->feeds[i].label;
    if (n == 0)
        return fl_err(e, "%s: the reader has no feeds besides labels to predict from", path);
    Feed *feeds = fl_xcalloc(n, sizeof *feeds);
    double **mean = fl_xcalloc(n, sizeof *mean), **std = fl_xcalloc(n, sizeof *std);
    for (size_t i = 0, j = 0; i < train->nfeeds; i++) {
        const Feed *tf = &train->feeds[i];
        if (tf->label) continue;
        feeds[j] = feed_copy(tf->name, tf->cols, tf->ncols, tf->levels, tf->width);
        feeds[j].dtype = tf->dtype;
        feeds[j].normalize = tf->normalize;
        feeds[j].has_scale = tf->has_scale;
        feeds[j].scale = tf->scale;
        mean[j] = train->mean[i]; /* borrowed: materialize copies them */
        std[j] = train->std[i];
        j++;
    }
    FlDataSource *src = source_new(path, feeds, n);
    FlStatus st = load(src, path, skip_rows, sep, e);
    if (st == FL_OK) {
        size_t *order = fl_xmalloc(fl_mul_size(src->nrows, sizeof *order));
        for (size_t i = 0; i < src->nrows; i++) order[i] = i;
        st = materialize(src, order, src->nrows, mean, std, src, out, e);
        free(order);
    }
    fl_data_source_free(src);
    free(mean);
    free(std);
    return st;
}

/* ---- dataset queries ---- */

size_t fl_data_rows(const FlDataset *ds) { return ds->nrows; }
size_t fl_data_feed_count(const FlDataset *ds) { return ds->nfeeds; }

ptrdiff_t fl_data_feed_find(const FlDataset *ds, const char *name) {
    for (size_t i = 0; i < ds->nfeeds; i++)
        if (strcmp(ds->feeds[i].name, name) == 0) return (ptrdiff_t)i;
    return -1;
}

const char *fl_data_feed_name(const FlDataset *ds, size_t feed) {
    FL_ASSERT(feed < ds->nfeeds);
    return ds->feeds[feed].name;
}

size_t fl_data_feed_cols(const FlDataset *ds, size_t feed) {
    FL_ASSERT(feed < ds->nfeeds);
    return ds->feeds[feed].ncols;
}

FlDType fl_data_feed_dtype(const FlDataset *ds, size_t feed) {
    FL_ASSERT(feed < ds->nfeeds);
    return ds->feeds[feed].dtype;
}

bool fl_data_feed_is_label(const FlDataset *ds, size_t feed) {
    FL_ASSERT(feed < ds->nfeeds);
    return ds->feeds[feed].label;
}

bool fl_data_feed_stats(const FlDataset *ds, size_t feed, const double **mean, const double **std) {
    FL_ASSERT(feed < ds->nfeeds);
    if (!ds->mean[feed]) return false;
    *mean = ds->mean[feed];
    *std = ds->std[feed];
    return true;
}

size_t fl_data_row_origin(const FlDataset *ds, size_t row) {
    FL_ASSERT(row < ds->nrows);
    return ds->origin[row];
}

const char *fl_data_file(const FlDataset *ds) { return ds->path; }

size_t fl_data_row_line(const FlDataset *ds, size_t row) {
    FL_ASSERT(row < ds->nrows);
    return ds->line[row];
}

void fl_data_fill_rows(const FlDataset *ds, size_t feed, const size_t *rows, size_t n, void *buf,
                       size_t bufsize) {
    FL_ASSERT(feed < ds->nfeeds && !ds->feeds[feed].levels);
    size_t stride = ds->feeds[feed].ncols * fl_dtype_size(ds->feeds[feed].dtype);
    FL_ASSERT(n <= bufsize / stride);
    unsigned char *dst = buf;
    const unsigned char *data = ds->data[feed];
    for (size_t k = 0; k < n; k++) {
        FL_ASSERT(rows[k] < ds->nrows);
        memcpy(dst + k * stride, data + rows[k] * stride, stride);
    }
}

int fl_data_feed_levels(const FlDataset *ds, size_t feed) {
    FL_ASSERT(feed < ds->nfeeds);
    return ds->feeds[feed].levels;
}

size_t fl_data_feed_width(const FlDataset *ds, size_t feed) {
    FL_ASSERT(feed < ds->nfeeds);
    return ds->feeds[feed].width;
}

void fl_data_seq_sizes(const FlDataset *ds, size_t feed, const size_t *rows, size_t n,
                       size_t sizes[FL_DATA_MAX_LEVELS + 1]) {
    FL_ASSERT(feed < ds->nfeeds && ds->feeds[feed].levels);
    for (size_t k = 0; k < n; k++) FL_ASSERT(rows[k] < ds->nrows);
    int levels = ds->feeds[feed].levels;
    seq_sizes(&ds->seq[feed], levels, rows, n, sizes);
    sizes[levels] /= ds->feeds[feed].width; /* steps (a multiple of width in every row: parse_seq) */
}

bool fl_data_seq_same_cut(const FlDataset *ds, size_t fa, size_t fb, size_t row) {
    FL_ASSERT(fa < ds->nfeeds && fb < ds->nfeeds && row < ds->nrows);
    int levels = ds->feeds[fa].levels;
    FL_ASSERT(levels && levels == ds->feeds[fb].levels);
    const Seq *a = &ds->seq[fa], *b = &ds->seq[fb];
    int64_t a0 = a->off[0][row], a1 = a->off[0][row + 1], b0 = b->off[0][row], b1 = b->off[0][row + 1];
    if (levels == 1) return (a1 - a0) / (int64_t)ds->feeds[fa].width == (b1 - b0) / (int64_t)ds->feeds[fb].width;
    if (a1 - a0 != b1 - b0) return false;
    for (int64_t u = 0; levels == 2 && u < a1 - a0; u++)
        if (a->off[1][a0 + u + 1] - a->off[1][a0 + u] != b->off[1][b0 + u + 1] - b->off[1][b0 + u]) return false;
    return true;
}

void fl_data_fill_seq(const FlDataset *ds, size_t feed, const size_t *rows, size_t n, void *vals,
                      size_t valbytes, int64_t *const *lod) {
    size_t sizes[FL_DATA_MAX_LEVELS + 1];
    fl_data_seq_sizes(ds, feed, rows, n, sizes);
    const Feed *f = &ds->feeds[feed];
    size_t es = fl_dtype_size(f->dtype);
    FL_ASSERT(sizes[f->levels] <= valbytes / es / f->width);
    seq_gather(&ds->seq[feed], f->levels, es, rows, n, vals, lod);
    if (f->width > 1) /* offsets counting steps, not values */
        for (size_t k = 0; k <= n; k++) lod[0][k] /= (int64_t)f->width;
}

/* ---- epochs ---- */

FlStatus fl_data_epoch_new(const FlDataset *ds, size_t batch_size, size_t trainers, bool shuffle,
                           uint64_t seed, uint64_t epoch, FlDataEpoch **out, FlErr *e) {
    *out = NULL;
    if (batch_size == 0) return fl_err(e, "the batch size must be at least 1");
    if (trainers == 0) return fl_err(e, "the number of trainers must be at least 1");
    if (batch_size > SIZE_MAX / trainers)
        return fl_err(e, "a global batch of %zu trainers x %zu rows is too large", trainers,
                      batch_size);
    return fl_data_epoch_new_global(ds, batch_size * trainers, trainers, shuffle, seed, epoch, out, e);
}

FlStatus fl_data_epoch_new_global(const FlDataset *ds, size_t global, size_t trainers, bool shuffle,
                                  uint64_t seed, uint64_t epoch, FlDataEpoch **out, FlErr *e) {
    *out = NULL;
    if (global == 0) return fl_err(e, "the global batch must hold at least 1 row");
    if (trainers == 0) return fl_err(e, "the number of trainers must be at least 1");
    FlDataEpoch *ep = fl_xcalloc(1, sizeof *ep);
    ep->ds = ds;
    ep->trainers = trainers;
    ep->global = global;
    ep->nbatches = ds->nrows / ep->global + (ds->nrows % ep->global != 0);
    ep->order = fl_xmalloc(fl_mul_size(ds->nrows ? ds->nrows : 1, sizeof *ep->order));
    if (shuffle) {
        perm(ep->order, ds->nrows, seed, STREAM_SHUFFLE, epoch);
    } else {
        for (size_t i = 0; i < ds->nrows; i++) ep->order[i] = i;
    }
    *out = ep;
    return FL_OK;
}

void fl_data_epoch_free(FlDataEpoch *ep) {
    if (!ep) return;
    free(ep->order);
    free(ep);
}

size_t fl_data_epoch_batches(const FlDataEpoch *ep) { return ep->nbatches; }

size_t fl_data_epoch_batch_rows(const FlDataEpoch *ep, size_t batch) {
    FL_ASSERT(batch < ep->nbatches);
    size_t left = ep->ds->nrows - batch * ep->global;
    return left < ep->global ? left : ep->global;
}

/* Where trainer t's share of a whole global batch starts: the global rows cut into `trainers`
 * shares as evenly as possible, the first ones taking the extra rows (t * b with b rows each
 * when they divide evenly). */
static size_t share_start(const FlDataEpoch *ep, size_t t) {
    size_t each = ep->global / ep->trainers, extra = ep->global % ep->trainers;
    return t * each + (t < extra ? t : extra);
}

size_t fl_data_epoch_share_rows(const FlDataEpoch *ep, size_t batch, size_t trainer) {
    FL_ASSERT(trainer < ep->trainers);
    size_t rows = fl_data_epoch_batch_rows(ep, batch), first = share_start(ep, trainer);
    size_t end = share_start(ep, trainer + 1);
    if (rows <= first) return 0;
    return (rows < end ? rows : end) - first;
}

const size_t *fl_data_epoch_order(const FlDataEpoch *ep) { return ep->order; }

const size_t *fl_data_epoch_share(const FlDataEpoch *ep, size_t batch, size_t trainer, size_t *n) {
    *n = fl_data_epoch_share_rows(ep, batch, trainer);
    return *n ? ep->order + batch * ep->global + share_start(ep, trainer) : ep->order;
}

void fl_data_epoch_fill(const FlDataEpoch *ep, size_t batch, size_t trainer, size_t feed, void *buf,
                        size_t bufsize) {
    size_t n;
    const size_t *rows = fl_data_epoch_share(ep, batch, trainer, &n);
    if (n) fl_data_fill_rows(ep->ds, feed, rows, n, buf, bufsize);
}
