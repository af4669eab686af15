/* svg.c: the SVG writer (svg.h): elements as text, escaped, with fixed two-decimal numbers. */
#include "tools/svg.h"

#include <math.h>
#include <stdio.h>

static const char *const anchors[FL_SVG_ANCHOR_COUNT] = {"start", "middle", "end"};

void fl_svg_escape(FlBuf *b, const char *s) {
    for (; *s; s++) {
        switch (*s) {
        case '&': fl_buf_puts(b, "&amp;"); break;
        case '<': fl_buf_puts(b, "&lt;"); break;
        case '>': fl_buf_puts(b, "&gt;"); break;
        case '"': fl_buf_puts(b, "&quot;"); break;
        case '\'': fl_buf_puts(b, "&#39;"); break;
        default:
            /* control characters are not allowed in XML 1.0 text: a visible replacement */
            if ((unsigned char)*s < 0x20 && *s != '\t' && *s != '\n') fl_buf_putc(b, '?');
            else fl_buf_putc(b, *s);
        }
    }
}

void fl_svg_begin(FlBuf *b, int width, int height, const char *title) {
    fl_buf_printf(b, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
                  "font-family=\"sans-serif\">\n<title>", width, height, width, height);
    fl_svg_escape(b, title);
    fl_buf_puts(b, "</title>\n");
    fl_svg_rect(b, 0, 0, width, height, "#ffffff", "none");
}

void fl_svg_end(FlBuf *b) { fl_buf_puts(b, "</svg>\n"); }

void fl_svg_group(FlBuf *b, const char *extra) {
    fl_buf_puts(b, "<g");
    if (extra) fl_buf_printf(b, " %s", extra);
    fl_buf_puts(b, ">\n");
}

void fl_svg_group_end(FlBuf *b) { fl_buf_puts(b, "</g>\n"); }

static void stroke_attrs(FlBuf *b, const char *stroke, double width, const char *dash) {
    fl_buf_printf(b, " stroke=\"%s\" stroke-width=\"%.2f\"", stroke, width);
    if (dash) fl_buf_printf(b, " stroke-dasharray=\"%s\"", dash);
}

void fl_svg_line(FlBuf *b, double x1, double y1, double x2, double y2, const char *stroke, double width,
                 const char *dash) {
    fl_buf_printf(b, "<line x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\"", x1, y1, x2, y2);
    stroke_attrs(b, stroke, width, dash);
    fl_buf_puts(b, "/>\n");
}

void fl_svg_rect(FlBuf *b, double x, double y, double w, double h, const char *fill, const char *stroke) {
    fl_buf_printf(b, "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"%s\" stroke=\"%s\"/>\n", x, y,
                  w, h, fill, stroke);
}

void fl_svg_text(FlBuf *b, double x, double y, FlSvgAnchor anchor, double size, const char *fill, double rotate,
                 const char *text) {
    fl_buf_printf(b, "<text x=\"%.2f\" y=\"%.2f\" text-anchor=\"%s\" font-size=\"%.2f\" fill=\"%s\"", x, y,
                  anchors[anchor], size, fill);
    if (rotate != 0) fl_buf_printf(b, " transform=\"rotate(%.2f %.2f %.2f)\"", rotate, x, y);
    fl_buf_putc(b, '>');
    fl_svg_escape(b, text);
    fl_buf_puts(b, "</text>\n");
}

void fl_svg_path(FlBuf *b, const double *xs, const double *ys, size_t n, const char *stroke, double width,
                 const char *dash, const char *extra) {
    fl_buf_puts(b, "<path");
    if (extra) fl_buf_printf(b, " %s", extra);
    fl_buf_puts(b, " fill=\"none\"");
    stroke_attrs(b, stroke, width, dash);
    fl_buf_puts(b, " stroke-linejoin=\"round\" d=\"");
    bool pen = false, any = false;
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(xs[i]) || !isfinite(ys[i])) {
            pen = false;
            continue;
        }
        fl_buf_printf(b, "%s%c%.2f %.2f", any ? " " : "", pen ? 'L' : 'M', xs[i], ys[i]);
        pen = any = true;
    }
    fl_buf_puts(b, "\"/>\n");
}
