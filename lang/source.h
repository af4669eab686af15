/* source.h: source files, spans and diagnostics.
 *
 * A span is a byte range in one file of an FlSources table. Lines and columns are computed only
 * when printing, from each file's line table (binary search), so spans stay small and cheap.
 * Columns are 1-based and count bytes (a tab counts as one column).
 *
 * A diagnostic prints as
 *     path:LINE:COL: error: message
 *     <the source line, verbatim>
 *     <spaces (tabs where the source line has tabs) up to the span's column>^~~~
 * with one '^' under the first byte and '~' under the rest of the span on that line. A note
 * ("path:LINE:COL: note: ...") has the same shape. Messages start lowercase and quote source
 * text with '...'.
 */
#ifndef FL_SOURCE_H
#define FL_SOURCE_H

#include "base/base.h"

typedef struct FlSpan {
    uint32_t file;       /* index in FlSources */
    uint32_t start, end; /* byte offsets, end exclusive (end == start for a point) */
} FlSpan;

typedef struct FlSourceFile {
    char *path;          /* as given (printed in diagnostics) */
    char *text;          /* owned, NUL-terminated */
    size_t len;
    uint32_t *line_starts; /* offset of each line's first byte */
    size_t nlines;
} FlSourceFile;

typedef struct FlSources {
    FL_VEC(FlSourceFile *) files;
} FlSources;

void fl_sources_init(FlSources *s);
void fl_sources_fini(FlSources *s);
/* Adds a file whose text the table takes (must be malloc'ed, NUL-terminated); returns its id. */
uint32_t fl_sources_add_take(FlSources *s, const char *path, char *text, size_t len);
/* Line and column (1-based) of a byte offset. */
void fl_sources_linecol(const FlSources *s, uint32_t file, uint32_t off, int *line, int *col);
const FlSourceFile *fl_sources_file(const FlSources *s, uint32_t file);
static inline FlSpan fl_span(uint32_t file, uint32_t start, uint32_t end) {
    FlSpan sp = {file, start, end};
    return sp;
}
/* The span from a's start to b's end. */
static inline FlSpan fl_span_join(FlSpan a, FlSpan b) {
    FlSpan sp = {a.file, a.start, b.end > a.end ? b.end : a.end};
    return sp;
}

/* Diagnostics: recorded as they come, printed into `out` (the caller decides where it goes).
 * Every error counts (nerrors); after max_errors printed ones (default 20) the rest are not
 * printed, nor is an error identical to one printed already (same place, same message: an
 * error inside a compile-time loop meets it once per iteration); a note goes with its error. */
typedef struct FlDiag {
    const FlSources *sources;
    FlBuf out;
    int nerrors, nshown;
    int max_errors;
    FL_VEC(char *) seen; /* "file:start:end:message" of the errors printed */
    bool dropping;       /* the last error was not printed: neither are its notes */
    const char *tool;    /* the prefix of messages with no location: "flc" unless set */
} FlDiag;

void fl_diag_init(FlDiag *d, const FlSources *s);
void fl_diag_fini(FlDiag *d);
void fl_diag_error(FlDiag *d, FlSpan sp, const char *fmt, ...) FL_PRINTF(3, 4);
void fl_diag_note(FlDiag *d, FlSpan sp, const char *fmt, ...) FL_PRINTF(3, 4);
/* A located warning: printed once per place and message, counted nowhere (compiling goes on). */
void fl_diag_warning(FlDiag *d, FlSpan sp, const char *fmt, ...) FL_PRINTF(3, 4);
/* An error with no location (e.g. a file that cannot be read): "TOOL: error: message". */
void fl_diag_error_plain(FlDiag *d, const char *fmt, ...) FL_PRINTF(2, 3);
/* A warning with no location, "TOOL: warning: message": printed always, counted nowhere. */
void fl_diag_warning_plain(FlDiag *d, const char *fmt, ...) FL_PRINTF(2, 3);

#endif
