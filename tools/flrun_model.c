/* flrun_model.c: `flrun DIR --predict DATA` (flrun_model.h). DATA holds one input row per
 * non-blank line: the values of the model's feeds for that row, feed after feed in the order
 * save_inference_model named them, each feed's values (the product of its declared dims after
 * the batch dimension) in row-major order, separated by commas or blanks. Every row is one
 * prediction: the feeds are [rows, ...] tensors of their declared dtype, the targets are fetched
 * once, and each output line holds a row's values of every target, blank-separated, with nine
 * significant digits (a float32 printed so that it reads back the same). */
#include "tools/flrun_model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/ir/ir.h"
#include "runtime/api.h"

typedef FL_VEC(double) Doubles;

/* The values of DATA's rows into *vals (rows of `width` values each) and their count into *rows.
 * Errors name the file and line. */
static FlStatus read_rows(const char *path, size_t width, Doubles *vals, int64_t *rows, FlErr *e) {
    size_t len;
    FlErr e2;
    char *text = fl_read_regular_file(path, &len, &e2);
    if (!text) return fl_err(e, "--predict: %s", e2.msg);
    FlStatus st = FL_OK;
    int line = 0;
    *rows = 0;
    for (char *p = text; st == FL_OK && p < text + len;) {
        char *nl = memchr(p, '\n', (size_t)(text + len - p));
        char *end = nl ? nl : text + len;
        line++;
        size_t got = 0;
        char *q = p;
        for (;;) {
            while (q < end && (*q == ' ' || *q == '\t' || *q == '\r' || *q == ',')) q++;
            if (q >= end) break;
            char save = *end;
            *end = 0;
            char *after;
            double v = strtod(q, &after);
            *end = save;
            if (after == q || (after < end && !strchr(" \t\r,", *after))) {
                int n = 0;
                while (q + n < end && !strchr(" \t\r,", q[n])) n++;
                st = fl_err(e, "%s:%d: '%.*s' is not a number", path, line, n > 40 ? 40 : n, q);
                break;
            }
            FL_VEC_PUSH(vals, v);
            got++;
            q = after;
        }
        if (st == FL_OK && got && got != width)
            st = fl_err(e, "%s:%d: %zu values, but the model's feeds take %zu per row", path, line, got, width);
        if (st == FL_OK && got) ++*rows;
        p = end + 1;
    }
    if (st == FL_OK && !*rows) st = fl_err(e, "--predict %s: no rows", path);
    free(text);
    return st;
}

/* The values per row of feed d (its dims after the batch dimension), or an error saying why the
 * feed cannot be given as rows of numbers. */
static FlStatus row_width(const FlVarDesc *d, int64_t *out, FlErr *e) {
    if (d->kind != FL_VAR_DENSE || d->lod_level)
        return fl_err(e, "--predict: feed '%s' is %s: rows of numbers feed dense tensors only (fluidc.load or "
                      "fl_program_load feed the rest)", d->name, d->lod_level ? "a sequence (LoD) var" : "not a tensor");
    if (d->ndim < 1 || d->shape[0] != -1)
        return fl_err(e, "--predict: feed '%s' has no batch dimension (its shape does not start with -1)", d->name);
    int64_t w = 1;
    for (int k = 1; k < d->ndim; k++) {
        if (d->shape[k] < 0)
            return fl_err(e, "--predict: feed '%s' has an unknown dimension %d besides the batch's", d->name, k);
        w *= d->shape[k];
    }
    *out = w;
    return FL_OK;
}

static void print_value(const FlTensor *t, int64_t i) {
    double v = fl_tensor_get(t, i);
    if (t->dtype == FL_DT_FLOAT32 || t->dtype == FL_DT_FLOAT64) printf("%.9g", v);
    else printf("%lld", (long long)v);
}

int fl_flrun_model(const FlModelRun *m) {
    FlErr e = {{0}};
    FlLoadedProgram *prog = NULL;
    FlExecutor *ex = NULL;
    FlScope *scope = NULL;
    Doubles vals = {0};
    size_t nfeeds = 0, nfetch = 0;
    FlTensor *ft = NULL;
    FlFeed *feeds = NULL;
    FlFetch *fetches = NULL;
    int64_t *widths = NULL;
    int rc = 1;
    if (fl_program_load(m->model, &prog, &e) != FL_OK) goto done;
    const FlBundle *b = fl_program_bundle(prog);
    const FlInferenceSpec *spec = b->inference;
    if (!spec) {
        fl_err(&e, "%s: not an inference model", m->model);
        goto done;
    }
    const FlBlock *g = fl_ir_block(b->main, 0);
    nfeeds = spec->feeds.len;
    widths = fl_xcalloc(nfeeds + 1, sizeof *widths);
    size_t width = 0;
    for (size_t i = 0; i < nfeeds; i++) {
        if (row_width(fl_ir_var_find(g, spec->feeds.data[i]), &widths[i], &e) != FL_OK) goto done;
        width += (size_t)widths[i];
    }
    if (m->predict_var && !fl_ir_var_find(g, m->predict_var)) {
        fl_err(&e, "--predict-var '%s' is not a var of the model (its targets: %s%s)", m->predict_var,
               spec->targets.data[0], spec->targets.len > 1 ? ", ..." : "");
        goto done;
    }
    int64_t rows;
    if (read_rows(m->predict, width, &vals, &rows, &e) != FL_OK) goto done;
    FlExecutorOptions xo = {.seed = m->seed, .threads = m->threads};
    if (fl_executor_new(prog, &xo, &ex, &e) != FL_OK) goto done;
    scope = fl_scope_new(NULL);
    if (fl_executor_run_startup(ex, scope, &e) != FL_OK) goto done;
    ft = fl_xcalloc(nfeeds + 1, sizeof *ft);
    for (size_t i = 0; i < nfeeds; i++) ft[i] = (FlTensor)FL_TENSOR_INIT;
    feeds = fl_xcalloc(nfeeds + 1, sizeof *feeds);
    size_t at = 0;
    for (size_t i = 0; i < nfeeds; i++) { /* feed i: columns [at, at + widths[i]) of every row */
        const FlVarDesc *d = fl_ir_var_find(g, spec->feeds.data[i]);
        int64_t ne[FL_IR_MAX_DIMS];
        memcpy(ne, d->shape, sizeof ne);
        ne[0] = rows;
        if (fl_tensor_alloc(&e, &ft[i], d->dtype, d->ndim, ne) != FL_OK) goto done;
        for (int64_t r = 0; r < rows; r++)
            for (int64_t k = 0; k < widths[i]; k++)
                fl_tensor_set(&ft[i], r * widths[i] + k, vals.data[(size_t)r * width + at + (size_t)k]);
        at += (size_t)widths[i];
        feeds[i] = (FlFeed){d->name, &ft[i]};
    }
    nfetch = m->predict_var ? 1 : spec->targets.len;
    fetches = fl_xcalloc(nfetch, sizeof *fetches);
    for (size_t i = 0; i < nfetch; i++)
        fetches[i] = (FlFetch){m->predict_var ? m->predict_var : spec->targets.data[i], FL_TENSOR_INIT};
    if (fl_executor_run(ex, scope, feeds, nfeeds, fetches, nfetch, &e) != FL_OK) goto done;
    for (size_t i = 0; i < nfetch; i++) {
        const FlTensor *t = &fetches[i].tensor;
        if (t->ndim < 1 || t->ne[0] != rows) {
            fl_err(&e, "--predict: '%s' is %s, not one row per input row (%lld rows)", fetches[i].name,
                   fl_tensor_shape(t).s, (long long)rows);
            goto done;
        }
    }
    for (int64_t r = 0; r < rows; r++) {
        for (size_t i = 0; i < nfetch; i++) {
            const FlTensor *t = &fetches[i].tensor;
            int64_t per = fl_tensor_numel(t) / rows;
            for (int64_t k = 0; k < per; k++) {
                if (i || k) putchar(' ');
                print_value(t, r * per + k);
            }
        }
        putchar('\n');
    }
    rc = 0;
done:
    if (rc) fprintf(stderr, "flrun: error: %s\n", e.msg);
    for (size_t i = 0; ft && i < nfeeds; i++) fl_tensor_fini(&ft[i]);
    for (size_t i = 0; fetches && i < nfetch; i++) fl_tensor_fini(&fetches[i].tensor);
    free(ft);
    free(feeds);
    free(fetches);
    free(widths);
    FL_VEC_FREE(&vals);
    fl_scope_free(scope);
    fl_executor_free(ex);
    fl_program_free(prog);
    return rc;
}
