/* svg.h: a minimal writer of self-contained SVG documents, for the tools' pictures (the training
 * curves of `flc plot` and `flrun --plot`, tools/curves.h).
 *
 * A document is text appended to an FlBuf: the root <svg> with its size and a <title>, then
 * elements, then the end. Everything a browser needs is in the file: no script, no external font
 * (a generic family, "sans-serif"), no linked image or style sheet; the writer emits no element or
 * attribute that could fetch anything. Text is escaped for XML; numbers are written with two
 * decimals, so a picture is the same bytes on every machine for the same data.
 *
 *     FlBuf b = {0};
 *     fl_svg_begin(&b, 640, 480, "loss");
 *     fl_svg_text(&b, 320, 20, FL_SVG_MIDDLE, 14, "#000", NULL, "loss");
 *     fl_svg_end(&b);
 *
 * Attributes passed as `extra` are written as given (the caller's constant text: classes, data-
 * attributes); text and titles are escaped here. Nothing is thread-safe beyond one buffer per
 * thread.
 */
#ifndef FL_SVG_H
#define FL_SVG_H

#include <stddef.h>

#include "base/base.h"

typedef enum FlSvgAnchor { FL_SVG_START, FL_SVG_MIDDLE, FL_SVG_END, FL_SVG_ANCHOR_COUNT } FlSvgAnchor;

/* The root element (width x height pixels, a white background) and the document's title. */
void fl_svg_begin(FlBuf *b, int width, int height, const char *title);
void fl_svg_end(FlBuf *b);

/* s escaped for XML text and attribute values (& < > " '). */
void fl_svg_escape(FlBuf *b, const char *s);

/* A group (<g>) with the extra attributes (may be NULL), and its end. */
void fl_svg_group(FlBuf *b, const char *extra);
void fl_svg_group_end(FlBuf *b);

/* A line from (x1, y1) to (x2, y2); dash: a stroke-dasharray ("4 3") or NULL. */
void fl_svg_line(FlBuf *b, double x1, double y1, double x2, double y2, const char *stroke, double width,
                 const char *dash);
/* A rectangle; fill or stroke may be "none". */
void fl_svg_rect(FlBuf *b, double x, double y, double w, double h, const char *fill, const char *stroke);
/* Text at (x, y) (its baseline), anchored; rotate: degrees about (x, y) (0: none). */
void fl_svg_text(FlBuf *b, double x, double y, FlSvgAnchor anchor, double size, const char *fill, double rotate,
                 const char *text);

/* A path through n points (xs, ys): a NaN coordinate breaks it (the next point starts a new
 * piece). stroke, width, dash as for a line; extra: more attributes (class, data-*) or NULL. */
void fl_svg_path(FlBuf *b, const double *xs, const double *ys, size_t n, const char *stroke, double width,
                 const char *dash, const char *extra);

#endif
