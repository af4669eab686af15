/* curves.h: training curves: the figures of one or more training logs (flrun --log's CSV, or the
 * rows of the run under way) drawn as one self-contained SVG picture (tools/svg.h), for
 * `flc plot` and `flrun --plot`.
 *
 * A run's curves (FlCurves) hold its log's rows: phase (train or test), epoch, step and one
 * value per figure (loss first, then the other fetches, as the log's columns say). The picture
 * has one panel per figure (the union of the runs' figures, in order of first appearance); in
 * each, every run is a colour, its training figures a solid line over the steps and its test
 * figures (one per epoch, over the whole test set) a dashed one with a dot per figure; an earlier
 * run's lines are wider, so runs that coincide (a job that follows its local run) all show. The first run's epochs are
 * marked by dotted vertical lines, numbered. A panel whose values are all positive and span a
 * factor of 30 or more (a loss falling over decades) has a log scale, which its axis label says.
 * Legend: each run's name in its colour, and which line is train and which test. Every series is
 * one <path class="series" data-run=".." data-metric=".." data-phase="train|test">; a series of
 * more points than twice the panel's width in pixels is reduced to each pixel column's lowest and
 * highest point (the line looks the same). Not-a-number values break a line.
 *
 * Ownership: an FlCurves owns its strings and rows (fl_curves_fini). Errors (reading a log) name
 * the file and line.
 */
#ifndef FL_CURVES_H
#define FL_CURVES_H

#include <stdbool.h>
#include <stdint.h>

#include "base/base.h"

typedef struct FlCurveRow {
    bool test;            /* a test row (the test set's figures after an epoch) */
    int64_t epoch, step;  /* as the log has them (step: the training steps so far) */
    double *v;            /* one value per figure; owned */
} FlCurveRow;

typedef struct FlCurves {
    char *label;               /* the run's name in the legend; owned */
    FL_VEC(char *) names;      /* the figures: "loss", then the others; owned */
    FL_VEC(FlCurveRow) rows;
} FlCurves;

/* A run named `label` with figures names[0..n). */
void fl_curves_init(FlCurves *c, const char *label, const char *const *names, size_t n);
void fl_curves_fini(FlCurves *c);
/* One row: v holds a value per figure (copied). */
void fl_curves_add(FlCurves *c, bool test, int64_t epoch, int64_t step, const double *v);

/* Reads an flrun log (docs/running.md, "The log": a header `phase,rank,epoch,step,loss,...`, then
 * one row per training step and per evaluation) into *out, named label. Errors: the file cannot
 * be read, its header is not a log's, a row's phase, numbers or width are wrong (path:line). */
FlStatus fl_curves_read(const char *path, const char *label, FlCurves *out, FlErr *e) FL_WARN_UNUSED;

/* The picture of runs[0..n) (n >= 1) titled `title`, appended to out as an SVG document. */
void fl_curves_svg(const FlCurves *runs, size_t n, const char *title, FlBuf *out);

#endif
