/* source.c: the source table (files, line tables) and diagnostics printed with a caret line.
 *
 * Each file keeps the offset of every line's first byte; a byte offset becomes a line by binary
 * search over that table, and a column by subtracting the line's start (1-based, in bytes).
 * Diagnostics are formatted into FlDiag.out as they come (see source.h for the shape). The
 * source line is copied verbatim except that control bytes other than tab (NUL, ESC, a stray
 * CR...) print as '?', so that a diagnostic never carries terminal escapes or truncates at a NUL.
 */
#include "lang/source.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void fl_sources_init(FlSources *s) { memset(s, 0, sizeof *s); }

void fl_sources_fini(FlSources *s) {
    for (size_t i = 0; i < s->files.len; i++) {
        FlSourceFile *f = s->files.data[i];
        free(f->path);
        free(f->text);
        free(f->line_starts);
        free(f);
    }
    FL_VEC_FREE(&s->files);
}

uint32_t fl_sources_add_take(FlSources *s, const char *path, char *text, size_t len) {
    FL_ASSERT(text && s->files.len < UINT32_MAX);
    FlSourceFile *f = fl_xcalloc(1, sizeof *f);
    f->path = fl_xstrdup(path);
    f->text = text;
    f->len = len;
    size_t cap = 0;
    fl_grow((void **)&f->line_starts, &cap, 1, sizeof *f->line_starts);
    f->line_starts[f->nlines++] = 0;
    for (size_t i = 0; i < len; i++) {
        if (text[i] != '\n') continue;
        fl_grow((void **)&f->line_starts, &cap, f->nlines + 1, sizeof *f->line_starts);
        f->line_starts[f->nlines++] = (uint32_t)(i + 1);
    }
    FL_VEC_PUSH(&s->files, f);
    return (uint32_t)(s->files.len - 1);
}

const FlSourceFile *fl_sources_file(const FlSources *s, uint32_t file) {
    FL_ASSERT(file < s->files.len);
    return s->files.data[file];
}

/* Index (0-based) of the line holding byte `off`: the last line start <= off. */
static size_t line_index(const FlSourceFile *f, uint32_t off) {
    size_t lo = 0, hi = f->nlines; /* invariant: line_starts[lo] <= off, answer < hi */
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (f->line_starts[mid] <= off) lo = mid;
        else hi = mid;
    }
    return lo;
}

void fl_sources_linecol(const FlSources *s, uint32_t file, uint32_t off, int *line, int *col) {
    const FlSourceFile *f = fl_sources_file(s, file);
    if (off > f->len) off = (uint32_t)f->len;
    size_t li = line_index(f, off);
    *line = (int)li + 1;
    *col = (int)(off - f->line_starts[li]) + 1;
}

void fl_diag_init(FlDiag *d, const FlSources *s) {
    memset(d, 0, sizeof *d);
    d->sources = s;
    d->max_errors = 20;
    d->tool = "flc";
}

void fl_diag_fini(FlDiag *d) {
    fl_buf_free(&d->out);
    for (size_t i = 0; i < d->seen.len; i++) free(d->seen.data[i]);
    FL_VEC_FREE(&d->seen);
}

/* "path:L:C: kind: message", the source line, the caret line. */
static void report(FlDiag *d, FlSpan sp, const char *kind, const char *fmt, va_list ap) {
    const FlSourceFile *f = fl_sources_file(d->sources, sp.file);
    uint32_t start = sp.start > f->len ? (uint32_t)f->len : sp.start;
    uint32_t end = sp.end < start ? start : sp.end;
    size_t li = line_index(f, start);
    size_t ls = f->line_starts[li];
    size_t le = li + 1 < f->nlines ? f->line_starts[li + 1] - 1 : f->len; /* at '\n' or EOF */
    size_t shown = le;
    if (shown > ls && f->text[shown - 1] == '\r') shown--;

    fl_buf_printf(&d->out, "%s:%zu:%zu: %s: ", f->path, li + 1, (size_t)start - ls + 1, kind);
    fl_buf_vprintf(&d->out, fmt, ap);
    fl_buf_putc(&d->out, '\n');
    for (size_t i = ls; i < shown; i++) {
        unsigned char c = (unsigned char)f->text[i];
        fl_buf_putc(&d->out, (c < 0x20 && c != '\t') || c == 0x7f ? '?' : (char)c);
    }
    fl_buf_putc(&d->out, '\n');
    for (size_t i = ls; i < start; i++) fl_buf_putc(&d->out, f->text[i] == '\t' ? '\t' : ' ');
    fl_buf_putc(&d->out, '^');
    size_t last = end < le ? end : le; /* the span's part on this line */
    for (size_t i = (size_t)start + 1; i < last; i++) fl_buf_putc(&d->out, '~');
    fl_buf_putc(&d->out, '\n');
}

static bool room(const FlDiag *d) { return d->max_errors <= 0 || d->nshown < d->max_errors; }

/* Whether the error (sp, message) was printed before; remembers it otherwise. */
static bool repeated(FlDiag *d, FlSpan sp, const char *fmt, va_list ap) {
    FlBuf key = {0};
    fl_buf_printf(&key, "%u:%u:%u:", sp.file, sp.start, sp.end);
    fl_buf_vprintf(&key, fmt, ap);
    for (size_t i = 0; i < d->seen.len; i++)
        if (!strcmp(d->seen.data[i], fl_buf_str(&key))) {
            fl_buf_free(&key);
            return true;
        }
    FL_VEC_PUSH(&d->seen, fl_xstrdup(fl_buf_str(&key)));
    fl_buf_free(&key);
    return false;
}

void fl_diag_error(FlDiag *d, FlSpan sp, const char *fmt, ...) {
    d->nerrors++;
    va_list ap;
    va_start(ap, fmt);
    d->dropping = !room(d) || repeated(d, sp, fmt, ap);
    va_end(ap);
    if (d->dropping) return;
    d->nshown++;
    va_start(ap, fmt);
    report(d, sp, "error", fmt, ap);
    va_end(ap);
}

void fl_diag_warning(FlDiag *d, FlSpan sp, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    bool again = repeated(d, sp, fmt, ap);
    va_end(ap);
    if (again) return;
    va_start(ap, fmt);
    report(d, sp, "warning", fmt, ap);
    va_end(ap);
}

/* A note belongs to the last error: it is printed when that error was. */
void fl_diag_note(FlDiag *d, FlSpan sp, const char *fmt, ...) {
    if (d->dropping) return;
    va_list ap;
    va_start(ap, fmt);
    report(d, sp, "note", fmt, ap);
    va_end(ap);
}

void fl_diag_error_plain(FlDiag *d, const char *fmt, ...) {
    d->nerrors++;
    d->dropping = !room(d);
    if (d->dropping) return;
    d->nshown++;
    va_list ap;
    va_start(ap, fmt);
    fl_buf_printf(&d->out, "%s: error: ", d->tool);
    fl_buf_vprintf(&d->out, fmt, ap);
    fl_buf_putc(&d->out, '\n');
    va_end(ap);
}

void fl_diag_warning_plain(FlDiag *d, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fl_buf_printf(&d->out, "%s: warning: ", d->tool);
    fl_buf_vprintf(&d->out, fmt, ap);
    fl_buf_putc(&d->out, '\n');
    va_end(ap);
}
