/* ir_show.c: `flc show` (a stable, readable listing) and `flc dot` (Graphviz) of programs,
 * bundles and plans.
 *
 * show: blocks in order, each var then each op in order; attributes sorted by name; floats with
 * %g; locations as basename:line:col through the bundle's source table. Tests compare this text,
 * so change it only on purpose. Both printers only read the IR, never assert on its contents and
 * take time linear in its size (an op's attributes are sorted: k log k).
 *
 * dot: node ids are generated (<prog>_b<block>_v<i> / _op<i> / _u<i> / _anchor), so only
 * labels carry user text, quoted and escaped. Every node is declared inside its block's cluster;
 * all edges come after the clusters at the top level (an edge inside a cluster would pull its
 * nodes into it).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/ir/ir.h"
#include "compiler/ir/train_driver.h"

/* ---- show ---- */

void fl_ir_shape_str(int ndim, const int64_t *shape, FlBuf *out) {
    fl_buf_putc(out, '[');
    for (int i = 0; i < ndim; i++) fl_buf_printf(out, "%s%lld", i ? ", " : "", (long long)shape[i]);
    fl_buf_putc(out, ']');
}

/* A quoted string with C escapes, so that any bytes print on one line. */
static void put_quoted(FlBuf *out, const char *s) {
    fl_buf_putc(out, '"');
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
        if (*p == '"' || *p == '\\') {
            fl_buf_putc(out, '\\');
            fl_buf_putc(out, (char)*p);
        } else if (*p == '\n') {
            fl_buf_puts(out, "\\n");
        } else if (*p == '\t') {
            fl_buf_puts(out, "\\t");
        } else if (*p < 0x20 || *p == 0x7f) {
            fl_buf_printf(out, "\\x%02x", *p);
        } else {
            fl_buf_putc(out, (char)*p);
        }
    }
    fl_buf_putc(out, '"');
}

static const char *basename_of(const char *path) {
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

static void put_loc(FlBuf *out, FlLoc l, const FlBundle *src) {
    if (l.file < 0 && l.line == 0) return;
    fl_buf_puts(out, "  @ ");
    if (l.file < 0)
        fl_buf_puts(out, "?");
    else if (src && (size_t)l.file < src->source_paths.len && src->source_paths.data[l.file])
        fl_buf_puts(out, basename_of(src->source_paths.data[l.file]));
    else
        fl_buf_printf(out, "<source %d>", (int)l.file);
    fl_buf_printf(out, ":%d:%d", (int)l.line, (int)l.col);
}

static void put_var_type(FlBuf *out, const FlVarDesc *v) {
    const char *dt = fl_dtype_name(v->dtype);
    int nd = v->ndim < 0 ? 0 : v->ndim > FL_IR_MAX_DIMS ? FL_IR_MAX_DIMS : v->ndim;
    switch (v->kind) {
    case FL_VAR_DENSE:
        fl_buf_puts(out, dt);
        fl_ir_shape_str(nd, v->shape, out);
        return;
    case FL_VAR_CHANNEL:
        fl_buf_puts(out, "chan<");
        for (int i = 0; i < v->elem_chans && i < FL_IR_MAX_DIMS; i++) fl_buf_puts(out, "chan<");
        fl_buf_puts(out, dt);
        if (nd) fl_ir_shape_str(nd, v->shape, out);
        for (int i = 0; i < v->elem_chans && i < FL_IR_MAX_DIMS; i++) fl_buf_puts(out, ">");
        fl_buf_printf(out, "> cap %lld", (long long)v->capacity);
        return;
    case FL_VAR_RAW: fl_buf_puts(out, "raw"); return;
    case FL_VAR_SELECTED_ROWS:
        fl_buf_printf(out, "selected_rows<%s", dt);
        fl_ir_shape_str(nd, v->shape, out);
        fl_buf_puts(out, ">");
        return;
    case FL_VAR_TENSOR_ARRAY:
        fl_buf_printf(out, "array<%s", dt);
        if (nd) fl_ir_shape_str(nd, v->shape, out);
        fl_buf_puts(out, ">");
        return;
    case FL_VAR_KIND_COUNT: break;
    }
    fl_buf_printf(out, "<kind %d>", (int)v->kind);
}

static void show_var(FlBuf *out, const FlVarDesc *v, const FlBundle *src) {
    fl_buf_printf(out, "  var %s : ", v->name ? v->name : "");
    put_var_type(out, v);
    if (v->lod_level > 0 && v->lod_level <= FL_IR_MAX_LOD) {
        fl_buf_printf(out, " lod_level %d (", v->lod_level);
        for (int i = 0; i < v->lod_level; i++) fl_buf_printf(out, "%s%s", i ? ", " : "", v->lod[i] ? v->lod[i] : "");
        fl_buf_puts(out, ")");
    }
    if (v->persistable || v->trainable || v->stop_gradient) {
        fl_buf_puts(out, " ");
        if (v->persistable) fl_buf_puts(out, " persistable");
        if (v->trainable) fl_buf_puts(out, " trainable");
        if (v->stop_gradient) fl_buf_puts(out, " stop_gradient");
    }
    put_loc(out, v->loc, src);
    fl_buf_putc(out, '\n');
}

static void put_slots(FlBuf *out, const FlSlot *s, size_t n) {
    for (size_t i = 0; i < n; i++) {
        fl_buf_printf(out, "%s%s=[", i ? " " : "", s[i].name ? s[i].name : "");
        for (size_t j = 0; j < s[i].nargs; j++)
            fl_buf_printf(out, "%s%s", j ? ", " : "", s[i].args[j] ? s[i].args[j] : "");
        fl_buf_putc(out, ']');
    }
}

static void put_ints(FlBuf *out, const int64_t *v, size_t n) {
    fl_buf_putc(out, '[');
    for (size_t i = 0; v && i < n; i++)
        fl_buf_printf(out, "%s%lld", i ? ", " : "", (long long)v[i]);
    fl_buf_putc(out, ']');
}

static void put_attr_value(FlBuf *out, const FlAttr *a) {
    switch (a->type) {
    case FL_ATTR_INT: fl_buf_printf(out, "%lld", (long long)a->i); return;
    case FL_ATTR_FLOAT: fl_buf_printf(out, "%g", a->f); return;
    case FL_ATTR_STRING: put_quoted(out, a->s); return;
    case FL_ATTR_BOOL: fl_buf_puts(out, a->i ? "true" : "false"); return;
    case FL_ATTR_INTS: put_ints(out, a->ints, a->n); return;
    case FL_ATTR_FLOATS:
        fl_buf_putc(out, '[');
        for (size_t i = 0; a->floats && i < a->n; i++)
            fl_buf_printf(out, "%s%g", i ? ", " : "", a->floats[i]);
        fl_buf_putc(out, ']');
        return;
    case FL_ATTR_STRINGS:
        fl_buf_putc(out, '[');
        for (size_t i = 0; a->strs && i < a->n; i++) {
            if (i) fl_buf_puts(out, ", ");
            put_quoted(out, a->strs[i]);
        }
        fl_buf_putc(out, ']');
        return;
    case FL_ATTR_BLOCK: fl_buf_printf(out, "block %lld", (long long)a->i); return;
    case FL_ATTR_BLOCKS:
        fl_buf_puts(out, "blocks ");
        put_ints(out, a->ints, a->n);
        return;
    case FL_ATTR_TYPE_COUNT: break;
    }
    fl_buf_printf(out, "<type %d>", (int)a->type);
}

static int cmp_attr(const void *x, const void *y) {
    const FlAttr *a = *(const FlAttr *const *)x, *b = *(const FlAttr *const *)y;
    return strcmp(a->name ? a->name : "", b->name ? b->name : "");
}

static void show_op(FlBuf *out, const FlOpDesc *op, const FlBundle *src) {
    fl_buf_printf(out, "  op %s", op->type ? op->type : "");
    if (op->ins.len) {
        fl_buf_puts(out, "  ");
        put_slots(out, op->ins.data, op->ins.len);
    }
    if (op->outs.len) {
        fl_buf_puts(out, op->ins.len ? " -> " : "  -> ");
        put_slots(out, op->outs.data, op->outs.len);
    }
    if (op->attrs.len) {
        const FlAttr **sorted = fl_xmalloc(fl_mul_size(op->attrs.len, sizeof *sorted));
        for (size_t i = 0; i < op->attrs.len; i++) sorted[i] = &op->attrs.data[i];
        qsort(sorted, op->attrs.len, sizeof *sorted, cmp_attr);
        fl_buf_puts(out, "  {");
        for (size_t i = 0; i < op->attrs.len; i++) {
            fl_buf_printf(out, "%s%s=", i ? ", " : "", sorted[i]->name ? sorted[i]->name : "");
            put_attr_value(out, sorted[i]);
        }
        fl_buf_putc(out, '}');
        free(sorted);
    }
    put_loc(out, op->loc, src);
    fl_buf_putc(out, '\n');
}

void fl_ir_show_program(const FlProgram *p, const char *title, const FlBundle *src, FlBuf *out) {
    fl_buf_printf(out, "== %s ==\n", title);
    if (!p) {
        fl_buf_puts(out, "(none)\n");
        return;
    }
    for (size_t i = 0; i < p->blocks.len; i++) {
        const FlBlock *b = p->blocks.data[i];
        fl_buf_printf(out, "block %d (parent %d)\n", b->idx, b->parent);
        for (size_t j = 0; j < b->vars.len; j++) show_var(out, b->vars.data[j], src);
        for (size_t j = 0; j < b->ops.len; j++) show_op(out, b->ops.data[j], src);
    }
}

static const char *part_name(FlReaderPart p) {
    switch (p) {
    case FL_PART_ALL: return "all";
    case FL_PART_TRAIN: return "train";
    case FL_PART_TEST: return "test";
    }
    return "?";
}

static void put_names(FlBuf *out, char *const *v, size_t n) {
    fl_buf_putc(out, '[');
    for (size_t i = 0; i < n; i++) fl_buf_printf(out, "%s%s", i ? ", " : "", v[i] ? v[i] : "");
    fl_buf_putc(out, ']');
}

static void show_reader(FlBuf *out, const char *title, const FlReaderSpec *r) {
    fl_buf_printf(out, "%s: ", title);
    put_quoted(out, r->path);
    fl_buf_puts(out, " in ");
    put_quoted(out, r->base_dir);
    char sep[2] = {r->sep, 0};
    fl_buf_printf(out, ", skip_rows %lld, sep ", (long long)r->skip_rows);
    put_quoted(out, sep);
    fl_buf_putc(out, '\n');
    for (size_t i = 0; i < r->feeds.len; i++) {
        const FlFeedCols *f = &r->feeds.data[i];
        fl_buf_printf(out, "  feed %s : %s cols ", f->feed ? f->feed : "", fl_dtype_name(f->dtype));
        put_ints(out, f->cols, f->ncols);
        if (f->lod_level) fl_buf_printf(out, " lod_level %d", f->lod_level);
        fl_buf_putc(out, '\n');
    }
    if (r->normalize.len) {
        fl_buf_puts(out, "  normalize ");
        put_names(out, r->normalize.data, r->normalize.len);
        fl_buf_putc(out, '\n');
    }
    if (r->scale_feeds.len || r->scale_factors.len) {
        fl_buf_puts(out, "  scale [");
        for (size_t i = 0; i < r->scale_feeds.len; i++) {
            fl_buf_printf(out, "%s%s * ", i ? ", " : "",
                          r->scale_feeds.data[i] ? r->scale_feeds.data[i] : "");
            if (i < r->scale_factors.len)
                fl_buf_printf(out, "%g", r->scale_factors.data[i]);
            else
                fl_buf_putc(out, '?');
        }
        fl_buf_puts(out, "]\n");
    }
    if (r->has_split)
        fl_buf_printf(out, "  split fraction %g seed %lld, part %s\n", r->split_fraction,
                      (long long)r->split_seed, part_name(r->part));
    else if (r->part != FL_PART_ALL)
        fl_buf_printf(out, "  part %s\n", part_name(r->part));
}

static void show_run(FlBuf *out, const FlRunSpec *r) {
    fl_buf_puts(out, "== run spec ==\n");
    if (!r->present) {
        fl_buf_puts(out, "none (startup, then main once)\n");
        return;
    }
    fl_buf_printf(out, "batch_size %lld, epochs %lld, seed %lld\n", (long long)r->batch_size,
                  (long long)r->epochs, (long long)r->seed);
    if (r->reader) show_reader(out, "reader", r->reader);
    if (r->test_reader) show_reader(out, "test_reader", r->test_reader);
    fl_buf_puts(out, "fetch:");
    for (size_t i = 0; i < r->fetch_names.len; i++) {
        const char *v = i < r->fetch_vars.len ? r->fetch_vars.data[i] : "?";
        fl_buf_printf(out, "%s %s -> %s", i ? "," : "",
                      r->fetch_names.data[i] ? r->fetch_names.data[i] : "", v ? v : "");
    }
    fl_buf_putc(out, '\n');
    const FlProfileSpec *pf = &r->profile;
    if (pf->present)
        fl_buf_printf(out, "profile: %s, sorted_key %s, profile_path %s\n", pf->state ? pf->state : "",
                      pf->sorted_key ? pf->sorted_key : "None", pf->path ? pf->path : "None");
}

/* Bundle.readers, one line each: "reader 2: batch(1) 20 drop_last". */
static void show_readers(FlBuf *out, const FlBundle *b) {
    if (!b->readers.len) return;
    fl_buf_puts(out, "== readers ==\n");
    for (size_t i = 0; i < b->readers.len; i++) {
        const FlReaderDesc *r = b->readers.data[i];
        fl_buf_printf(out, "reader %zu: %s(", i, r->kind);
        for (size_t j = 0; j < r->inputs.len; j++) fl_buf_printf(out, "%s%d", j ? ", " : "", (int)r->inputs.data[j]);
        fl_buf_putc(out, ')');
        if (r->dataset) fl_buf_printf(out, " %s.%s", r->dataset, r->part ? r->part : "");
        if (r->n) fl_buf_printf(out, " %lld", (long long)r->n);
        if (r->drop_last) fl_buf_puts(out, " drop_last");
        if (r->check_alignment) fl_buf_puts(out, " check_alignment");
        if (r->words.len) fl_buf_printf(out, " word_idx of %zu words", r->words.len);
        if (r->data_type) fl_buf_printf(out, " data_type %lld", (long long)r->data_type);
        if (r->n2) fl_buf_printf(out, " %lld", (long long)r->n2);
        if (r->lang) fl_buf_printf(out, " %s", r->lang);
        for (size_t j = 0; j < r->slot_names.len; j++) /* multislot: slot name:type:width */
            fl_buf_printf(out, "%s%s:%s:%lld", j ? " " : " slots ", r->slot_names.data[j],
                          j < r->slot_types.len ? r->slot_types.data[j] : "?",
                          j < r->slot_widths.len ? (long long)r->slot_widths.data[j] : 0LL);
        for (size_t j = 0; j < r->slot_keys.len; j++) /* ctr: each slot's field (csv) or slot id (svm) */
            fl_buf_printf(out, "%s%lld", j ? " " : " keys ", (long long)r->slot_keys.data[j]);
        if (r->line_format) fl_buf_printf(out, " %s%s", r->line_format, r->gzip ? " gzip" : " plain");
        for (size_t j = 0, at = 0; j < r->ranks.len; at += (size_t)r->ranks.data[j++]) { /* recordio: shapes */
            fl_buf_puts(out, j ? " [" : " shapes [");
            for (int64_t k = 0; k < r->ranks.data[j] && at + (size_t)k < r->shape_concat.len; k++)
                fl_buf_printf(out, "%s%lld", k ? "," : "", (long long)r->shape_concat.data[at + (size_t)k]);
            fl_buf_putc(out, ']');
        }
        for (size_t j = 0; j < r->lod_levels.len; j++)
            fl_buf_printf(out, "%s%lld", j ? " " : " lod_levels ", (long long)r->lod_levels.data[j]);
        if (r->pass_num) fl_buf_printf(out, " pass_num %lld", (long long)r->pass_num);
        for (size_t j = 0; j < r->files.len; j++) fl_buf_printf(out, "%s%s", j ? " " : " files ", r->files.data[j]);
        fl_buf_putc(out, '\n');
    }
}

void fl_ir_show_bundle(const FlBundle *b, FlBuf *out) {
    fl_buf_printf(out, "bundle: role %s, index %lld\n", b->role ? b->role : "",
                  (long long)b->role_index);
    if (b->load) fl_buf_printf(out, "load: %s (after the startup program)\n", b->load);
    fl_buf_puts(out, "sources:");
    for (size_t i = 0; i < b->source_paths.len; i++)
        fl_buf_printf(out, "%s [%zu] %s", i ? "," : "", i,
                      b->source_paths.data[i] ? b->source_paths.data[i] : "");
    fl_buf_putc(out, '\n');
    fl_ir_show_program(b->startup, "startup program", b, out);
    fl_ir_show_program(b->main, "main program", b, out);
    for (size_t i = 0; i < b->programs.len; i++) {
        FlBuf t = {0};
        fl_buf_printf(&t, "program '%s'", b->programs.data[i].name);
        fl_ir_show_program(b->programs.data[i].program, fl_buf_str(&t), b, out);
        fl_buf_free(&t);
    }
    if (b->driver) /* beside a run spec: fluid.train's (compiler/ir/train_driver.h) */
        fl_ir_show_program(b->driver, fl_ir_bundle_trains(b) ? "driver program (fluid.train's loop)" : "driver program",
                           b, out);
    show_readers(out, b);
    show_run(out, &b->run);
    if (b->inference) { /* "inference model: feeds x; targets fc_0.tmp_1" */
        fl_buf_puts(out, "inference model: feeds");
        for (size_t i = 0; i < b->inference->feeds.len; i++)
            fl_buf_printf(out, "%s %s", i ? "," : "", b->inference->feeds.data[i]);
        fl_buf_puts(out, "; targets");
        for (size_t i = 0; i < b->inference->targets.len; i++)
            fl_buf_printf(out, "%s %s", i ? "," : "", b->inference->targets.data[i]);
        fl_buf_putc(out, '\n');
    }
}

/* The ranks of each role, as text: "rank 2", "ranks 0, 3" or "no rank" (one pass). */
static FlBuf *role_ranks(const FlPlan *p) {
    size_t n = p->roles.len;
    FlBuf *r = fl_xcalloc(n ? n : 1, sizeof *r);
    size_t *count = fl_xcalloc(n ? n : 1, sizeof *count);
    for (size_t i = 0; i < p->rank_role.len; i++) {
        int64_t k = p->rank_role.data[i];
        if (k >= 0 && (uint64_t)k < n) {
            fl_buf_printf(&r[k], "%s%zu", count[k] ? ", " : "", i);
            count[k]++;
        }
    }
    for (size_t k = 0; k < n; k++) {
        FlBuf t = {0};
        fl_buf_printf(&t, "%s%s", count[k] == 0 ? "no rank" : count[k] == 1 ? "rank " : "ranks ",
                      fl_buf_str(&r[k]));
        fl_buf_free(&r[k]);
        r[k] = t;
    }
    free(count);
    return r;
}

static const char *role_of(const FlBundle *b) {
    return b && b->role ? b->role : "?";
}

void fl_ir_show_plan(const FlPlan *p, FlBuf *out) {
    fl_buf_printf(out, "plan: mode %s, pservers %lld, trainers %lld\n", p->mode ? p->mode : "",
                  (long long)p->pservers, (long long)p->trainers);
    fl_buf_puts(out, "ranks:");
    for (size_t i = 0; i < p->rank_role.len; i++) {
        int64_t k = p->rank_role.data[i];
        fl_buf_printf(out, "%s %zu -> ", i ? "," : "", i);
        if (k >= 0 && (uint64_t)k < p->roles.len)
            fl_buf_printf(out, "%s %lld", role_of(p->roles.data[k]),
                          (long long)p->roles.data[k]->role_index);
        else
            fl_buf_printf(out, "<role %lld>", (long long)k);
    }
    fl_buf_putc(out, '\n');
    FlBuf *ranks = role_ranks(p);
    for (size_t i = 0; i < p->roles.len; i++) {
        const FlBundle *b = p->roles.data[i];
        fl_buf_printf(out, "=== role %s %lld (%s) ===\n", role_of(b), (long long)b->role_index,
                      fl_buf_str(&ranks[i]));
        fl_ir_show_bundle(b, out);
        fl_buf_free(&ranks[i]);
    }
    free(ranks);
}

/* ---- dot ---- */

/* Length of the valid UTF-8 sequence at p (at most n bytes), or 0. */
static size_t utf8_len(const unsigned char *p, size_t n) {
    size_t len;
    uint32_t min;
    if (p[0] >= 0xc2 && p[0] <= 0xdf) len = 2, min = 0x80;
    else if (p[0] >= 0xe0 && p[0] <= 0xef) len = 3, min = 0x800;
    else if (p[0] >= 0xf0 && p[0] <= 0xf4) len = 4, min = 0x10000;
    else return 0;
    if (len > n) return 0;
    uint32_t c = p[0] & (0x7f >> len);
    for (size_t i = 1; i < len; i++) {
        if ((p[i] & 0xc0) != 0x80) return 0;
        c = (c << 6) | (p[i] & 0x3f);
    }
    if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff)) return 0;
    return len;
}

/* Text for inside a DOT double-quoted string: quotes and backslashes escaped (a backslash
 * would start a DOT escape such as \N or \l), newlines as \n, other control bytes and invalid
 * UTF-8 as '?'. */
static void dot_text(FlBuf *out, const char *s) {
    if (!s) return;
    const unsigned char *p = (const unsigned char *)s;
    size_t n = strlen(s);
    for (size_t i = 0; i < n;) {
        unsigned char c = p[i];
        if (c == '"' || c == '\\') {
            fl_buf_putc(out, '\\');
            fl_buf_putc(out, (char)c);
            i++;
        } else if (c == '\n') {
            fl_buf_puts(out, "\\n");
            i++;
        } else if (c < 0x20 || c == 0x7f) {
            fl_buf_putc(out, '?');
            i++;
        } else if (c < 0x80) {
            fl_buf_putc(out, (char)c);
            i++;
        } else {
            size_t k = utf8_len(p + i, n - i);
            if (k) {
                fl_buf_append(out, (const char *)p + i, k);
                i += k;
            } else {
                fl_buf_putc(out, '?');
                i++;
            }
        }
    }
}

typedef struct DotCtx {
    FlBuf *out;   /* node and cluster statements */
    FlBuf edges;  /* edge statements, written after all clusters */
    const char *prefix;
    const FlProgram *p;
    FlMap *var_ids;   /* per block: var name -> (index + 1) */
    FlMap *undecl;    /* per block: undeclared arg name -> (index + 1) */
    size_t *nundecl;  /* per block: count of undeclared names */
} DotCtx;

#define IDX_PTR(i) ((void *)(uintptr_t)((i) + 1))
#define PTR_IDX(p) ((size_t)(uintptr_t)(p) - 1)

/* Appends the node id of var `name` as seen from block bi: its declaring block (bi or an
 * ancestor) or, if none declares it, an undeclared-name node in bi (declared on first use). */
static void var_node(DotCtx *c, size_t bi, const char *name, FlBuf *id) {
    const FlProgram *p = c->p;
    size_t b = bi;
    for (size_t steps = 0; steps <= p->blocks.len; steps++) {
        void *v = fl_map_find_str(&c->var_ids[b], name);
        if (v) {
            fl_buf_printf(id, "%s_b%zu_v%zu", c->prefix, b, PTR_IDX(v));
            return;
        }
        int parent = p->blocks.data[b]->parent;
        if (parent < 0 || (size_t)parent >= p->blocks.len) break;
        b = (size_t)parent;
    }
    void *u = fl_map_find_str(&c->undecl[bi], name);
    if (!u) {
        size_t k = c->nundecl[bi]++;
        u = IDX_PTR(k);
        fl_map_put_str(&c->undecl[bi], name, u);
        fl_buf_printf(c->out, "    %s_b%zu_u%zu [shape=ellipse, style=dashed, label=\"", c->prefix,
                      bi, k);
        dot_text(c->out, name);
        fl_buf_puts(c->out, "\\n(undeclared)\"];\n");
    }
    fl_buf_printf(id, "%s_b%zu_u%zu", c->prefix, bi, PTR_IDX(u));
}

static void dot_sub_edge(DotCtx *c, const char *op_id, int64_t blk, const char *attr) {
    if (blk < 0 || (uint64_t)blk >= c->p->blocks.len) return;
    fl_buf_printf(&c->edges,
                  "  %s -> %s_b%lld_anchor [style=dashed, lhead=cluster_%s_%lld, label=\"", op_id,
                  c->prefix, (long long)blk, c->prefix, (long long)blk);
    dot_text(&c->edges, attr);
    fl_buf_puts(&c->edges, "\"];\n");
}

static void dot_program(FlBuf *out, const FlProgram *p, const char *prefix, const char *title) {
    if (!p) return;
    size_t nb = p->blocks.len;
    DotCtx c = {out, {0}, prefix, p, fl_xcalloc(nb ? nb : 1, sizeof(FlMap)),
                fl_xcalloc(nb ? nb : 1, sizeof(FlMap)), fl_xcalloc(nb ? nb : 1, sizeof(size_t))};
    for (size_t i = 0; i < nb; i++) {
        const FlBlock *b = p->blocks.data[i];
        for (size_t j = 0; j < b->vars.len; j++)
            if (b->vars.data[j]->name)
                fl_map_put_str(&c.var_ids[i], b->vars.data[j]->name, IDX_PTR(j));
    }
    fl_buf_printf(out, "  subgraph cluster_%s {\n    label=\"", prefix);
    dot_text(out, title);
    fl_buf_puts(out, "\";\n");
    FlBuf id = {0};
    for (size_t i = 0; i < nb; i++) {
        const FlBlock *b = p->blocks.data[i];
        fl_buf_printf(out, "   subgraph cluster_%s_%zu {\n    label=\"block %zu\";\n", prefix, i,
                      i);
        fl_buf_printf(out, "    %s_b%zu_anchor [shape=point, style=invis];\n", prefix, i);
        for (size_t j = 0; j < b->vars.len; j++) {
            const FlVarDesc *v = b->vars.data[j];
            FlBuf t = {0};
            put_var_type(&t, v);
            fl_buf_printf(out, "    %s_b%zu_v%zu [shape=ellipse%s, label=\"", prefix, i, j,
                          v->persistable ? ", style=filled, fillcolor=lightblue" : "");
            dot_text(out, v->name);
            fl_buf_puts(out, "\\n");
            dot_text(out, fl_buf_str(&t));
            fl_buf_puts(out, "\"];\n");
            fl_buf_free(&t);
        }
        for (size_t j = 0; j < b->ops.len; j++) {
            const FlOpDesc *op = b->ops.data[j];
            char op_id[96];
            snprintf(op_id, sizeof op_id, "%s_b%zu_op%zu", prefix, i, j);
            fl_buf_printf(out, "    %s [shape=box, style=rounded, label=\"", op_id);
            dot_text(out, op->type);
            fl_buf_puts(out, "\"];\n");
            for (size_t s = 0; s < op->ins.len; s++)
                for (size_t k = 0; k < op->ins.data[s].nargs; k++) {
                    const char *arg = op->ins.data[s].args[k];
                    if (!arg) continue;
                    id.len = 0;
                    var_node(&c, i, arg, &id);
                    fl_buf_printf(&c.edges, "  %s -> %s [label=\"", fl_buf_str(&id), op_id);
                    dot_text(&c.edges, op->ins.data[s].name);
                    fl_buf_puts(&c.edges, "\"];\n");
                }
            for (size_t s = 0; s < op->outs.len; s++)
                for (size_t k = 0; k < op->outs.data[s].nargs; k++) {
                    const char *arg = op->outs.data[s].args[k];
                    if (!arg) continue;
                    id.len = 0;
                    var_node(&c, i, arg, &id);
                    fl_buf_printf(&c.edges, "  %s -> %s [label=\"", op_id, fl_buf_str(&id));
                    dot_text(&c.edges, op->outs.data[s].name);
                    fl_buf_puts(&c.edges, "\"];\n");
                }
            for (size_t k = 0; k < op->attrs.len; k++) {
                const FlAttr *a = &op->attrs.data[k];
                if (a->type == FL_ATTR_BLOCK) dot_sub_edge(&c, op_id, a->i, a->name);
                if (a->type == FL_ATTR_BLOCKS && a->ints)
                    for (size_t q = 0; q < a->n; q++) dot_sub_edge(&c, op_id, a->ints[q], a->name);
            }
        }
        fl_buf_puts(out, "   }\n");
    }
    fl_buf_puts(out, "  }\n");
    fl_buf_append(out, fl_buf_str(&c.edges), c.edges.len);
    fl_buf_free(&c.edges);
    fl_buf_free(&id);
    for (size_t i = 0; i < nb; i++) {
        fl_map_fini(&c.var_ids[i]);
        fl_map_fini(&c.undecl[i]);
    }
    free(c.var_ids);
    free(c.undecl);
    free(c.nundecl);
}

static void dot_begin(FlBuf *out) {
    fl_buf_puts(out, "digraph fluidc {\n  compound=true;\n  newrank=true;\n  node [fontname=\"Helvetica\", "
                     "fontsize=10];\n  edge [fontname=\"Helvetica\", fontsize=8];\n");
}

static void dot_bundle_body(FlBuf *out, const FlBundle *b, const char *prefix) {
    char pre[64];
    snprintf(pre, sizeof pre, "%s%sstartup", prefix, *prefix ? "_" : "");
    dot_program(out, b->startup, pre, "startup program");
    snprintf(pre, sizeof pre, "%s%smain", prefix, *prefix ? "_" : "");
    dot_program(out, b->main, pre, "main program");
}

void fl_ir_dot_bundle(const FlBundle *b, FlBuf *out) {
    dot_begin(out);
    dot_bundle_body(out, b, "");
    fl_buf_puts(out, "}\n");
}

void fl_ir_dot_plan(const FlPlan *p, FlBuf *out) {
    dot_begin(out);
    fl_buf_puts(out, "  label=\"plan: mode ");
    dot_text(out, p->mode);
    fl_buf_printf(out, ", %lld pservers, %lld trainers\";\n", (long long)p->pservers,
                  (long long)p->trainers);
    for (size_t i = 0; i < p->roles.len; i++) {
        const FlBundle *b = p->roles.data[i];
        char prefix[32];
        snprintf(prefix, sizeof prefix, "r%zu", i);
        fl_buf_printf(out, "  subgraph cluster_%s {\n  label=\"", prefix);
        dot_text(out, role_of(b));
        fl_buf_printf(out, " %lld\";\n", (long long)b->role_index);
        dot_bundle_body(out, b, prefix);
        fl_buf_puts(out, "  }\n");
    }
    fl_buf_puts(out, "}\n");
}
