/* ir_file.c: .flp / .plan files: conversion between the IR types of ir.h and the protobuf-c
 * structs generated from fluid.proto (the only code that sees them), encoding and decoding.
 *
 * Encoding builds the generated structs in an arena, pointing at the IR's own strings (no copy),
 * packs them and frees the arena at once. Decoding lets protobuf-c unpack the wire data (it
 * rejects malformed data), then checks the header (magic, version, exactly one of bundle/plan),
 * converts defensively (every count and index checked before use; nothing asserts on input) and
 * finally runs the structural validator of ir.c. Both are linear in the size of the program.
 */
#include <stdlib.h>
#include <string.h>

#include "compiler/ir/fluid.pb-c.h"
#include "compiler/ir/ir.h"
#include "compiler/ir/ir_impl.h"
#include "compiler/ir/ir_test.h"

/* ---- IR -> protobuf-c (encoding) ---- */

static char *enc_str(const char *s) {
    return (char *)(s ? s : ""); /* protobuf-c only reads it */
}

static char **enc_strs(FlArena *a, char *const *v, size_t n) {
    if (n == 0) return NULL;
    char **r = fl_arena_alloc(a, fl_mul_size(n, sizeof(char *)));
    for (size_t i = 0; i < n; i++) r[i] = enc_str(v[i]);
    return r;
}

static Fluidc__Loc *enc_loc(FlArena *a, FlLoc l) {
    if (l.file == -1 && l.line == 0 && l.col == 0 && l.len == 0) return NULL;
    Fluidc__Loc *m = fl_arena_alloc(a, sizeof *m);
    fluidc__loc__init(m);
    m->has_file = m->has_line = m->has_col = m->has_len = 1;
    m->file = l.file;
    m->line = l.line;
    m->col = l.col;
    m->len = l.len;
    return m;
}

static Fluidc__VarDesc *enc_var(FlArena *a, const FlVarDesc *v) {
    Fluidc__VarDesc *m = fl_arena_alloc(a, sizeof *m);
    fluidc__var_desc__init(m);
    m->name = enc_str(v->name);
    m->has_kind = m->has_dtype = 1;
    m->kind = (Fluidc__VarKind)v->kind;
    m->dtype = (Fluidc__DType)v->dtype;
    /* clamped: an invalid rank must not read past shape[] (the reader will refuse the file) */
    int nd = v->ndim < 0 ? 0 : v->ndim > FL_IR_MAX_DIMS ? FL_IR_MAX_DIMS : v->ndim;
    m->n_shape = (size_t)nd;
    m->shape = (int64_t *)v->shape;
    if (v->persistable) m->has_persistable = m->persistable = 1;
    if (v->trainable) m->has_trainable = m->trainable = 1;
    if (v->stop_gradient) m->has_stop_gradient = m->stop_gradient = 1;
    if (v->fed) m->has_fed = m->fed = 1;
    if (v->capacity) {
        m->has_capacity = 1;
        m->capacity = v->capacity;
    }
    if (v->elem_chans) {
        m->has_elem_chans = 1;
        m->elem_chans = v->elem_chans;
    }
    int nl = v->lod_level < 0 ? 0 : v->lod_level > FL_IR_MAX_LOD ? FL_IR_MAX_LOD : v->lod_level;
    m->n_lod = (size_t)nl;
    m->lod = enc_strs(a, v->lod, (size_t)nl);
    m->loc = enc_loc(a, v->loc);
    return m;
}

static Fluidc__Slot **enc_slots(FlArena *a, const FlSlot *s, size_t n) {
    if (n == 0) return NULL;
    Fluidc__Slot **r = fl_arena_alloc(a, fl_mul_size(n, sizeof *r));
    for (size_t i = 0; i < n; i++) {
        Fluidc__Slot *m = r[i] = fl_arena_alloc(a, sizeof *m);
        fluidc__slot__init(m);
        m->name = enc_str(s[i].name);
        m->n_args = s[i].nargs;
        m->args = enc_strs(a, s[i].args, s[i].nargs);
    }
    return r;
}

static Fluidc__Attr *enc_attr(FlArena *a, const FlAttr *at) {
    Fluidc__Attr *m = fl_arena_alloc(a, sizeof *m);
    fluidc__attr__init(m);
    m->name = enc_str(at->name);
    m->has_type = 1;
    m->type = (Fluidc__AttrType)at->type;
    switch (at->type) {
    case FL_ATTR_INT:
    case FL_ATTR_BOOL:
    case FL_ATTR_BLOCK:
        m->has_i = 1;
        m->i = at->i;
        break;
    case FL_ATTR_FLOAT:
        m->has_f = 1;
        m->f = at->f;
        break;
    case FL_ATTR_STRING: m->s = at->s; break;
    case FL_ATTR_INTS:
    case FL_ATTR_BLOCKS:
        m->n_ints = at->ints ? at->n : 0;
        m->ints = at->ints;
        break;
    case FL_ATTR_FLOATS:
        m->n_floats = at->floats ? at->n : 0;
        m->floats = at->floats;
        break;
    case FL_ATTR_STRINGS:
        m->n_strs = at->strs ? at->n : 0;
        m->strs = enc_strs(a, at->strs, m->n_strs);
        break;
    case FL_ATTR_TYPE_COUNT: break;
    }
    return m;
}

static Fluidc__OpDesc *enc_op(FlArena *a, const FlOpDesc *op) {
    Fluidc__OpDesc *m = fl_arena_alloc(a, sizeof *m);
    fluidc__op_desc__init(m);
    m->type = enc_str(op->type);
    m->n_inputs = op->ins.len;
    m->inputs = enc_slots(a, op->ins.data, op->ins.len);
    m->n_outputs = op->outs.len;
    m->outputs = enc_slots(a, op->outs.data, op->outs.len);
    m->n_attrs = op->attrs.len;
    if (op->attrs.len) {
        m->attrs = fl_arena_alloc(a, fl_mul_size(op->attrs.len, sizeof *m->attrs));
        for (size_t i = 0; i < op->attrs.len; i++) m->attrs[i] = enc_attr(a, &op->attrs.data[i]);
    }
    m->loc = enc_loc(a, op->loc);
    return m;
}

static Fluidc__ProgramDesc *enc_program(FlArena *a, const FlProgram *p) {
    if (!p) return NULL;
    Fluidc__ProgramDesc *m = fl_arena_alloc(a, sizeof *m);
    fluidc__program_desc__init(m);
    m->n_blocks = p->blocks.len;
    if (p->blocks.len) m->blocks = fl_arena_alloc(a, fl_mul_size(p->blocks.len, sizeof *m->blocks));
    for (size_t i = 0; i < p->blocks.len; i++) {
        const FlBlock *b = p->blocks.data[i];
        Fluidc__BlockDesc *bm = m->blocks[i] = fl_arena_alloc(a, sizeof *bm);
        fluidc__block_desc__init(bm);
        bm->has_idx = bm->has_parent_idx = 1;
        bm->idx = b->idx;
        bm->parent_idx = b->parent;
        bm->n_vars = b->vars.len;
        if (b->vars.len) bm->vars = fl_arena_alloc(a, fl_mul_size(b->vars.len, sizeof *bm->vars));
        for (size_t j = 0; j < b->vars.len; j++) bm->vars[j] = enc_var(a, b->vars.data[j]);
        bm->n_ops = b->ops.len;
        if (b->ops.len) bm->ops = fl_arena_alloc(a, fl_mul_size(b->ops.len, sizeof *bm->ops));
        for (size_t j = 0; j < b->ops.len; j++) bm->ops[j] = enc_op(a, b->ops.data[j]);
    }
    return m;
}

/* The file stores a reader's base_dir relative to the directory the file is written to (`dir`,
 * absolute; NULL: as it is in memory), so that a program and its data can move together. */
static Fluidc__ReaderSpec *enc_reader(FlArena *a, const FlReaderSpec *r, const char *dir) {
    if (!r) return NULL;
    Fluidc__ReaderSpec *m = fl_arena_alloc(a, sizeof *m);
    fluidc__reader_spec__init(m);
    m->path = r->path;
    m->base_dir = r->base_dir;
    if (dir && r->base_dir && r->base_dir[0] == '/') {
        char *rel = fl_path_relative(dir, r->base_dir);
        m->base_dir = fl_arena_strdup(a, rel);
        free(rel);
    }
    m->has_skip_rows = 1;
    m->skip_rows = r->skip_rows;
    m->has_sep = 1;
    m->sep = (unsigned char)r->sep;
    m->n_feeds = r->feeds.len;
    if (r->feeds.len) m->feeds = fl_arena_alloc(a, fl_mul_size(r->feeds.len, sizeof *m->feeds));
    for (size_t i = 0; i < r->feeds.len; i++) {
        const FlFeedCols *f = &r->feeds.data[i];
        Fluidc__FeedCols *fm = m->feeds[i] = fl_arena_alloc(a, sizeof *fm);
        fluidc__feed_cols__init(fm);
        fm->feed = enc_str(f->feed);
        fm->has_dtype = 1;
        fm->dtype = (Fluidc__DType)f->dtype;
        fm->n_cols = f->cols ? f->ncols : 0;
        fm->cols = f->cols;
        if (f->lod_level) {
            fm->has_lod_level = 1;
            fm->lod_level = f->lod_level;
        }
    }
    m->n_normalize = r->normalize.len;
    m->normalize = enc_strs(a, r->normalize.data, r->normalize.len);
    m->n_scale_feeds = r->scale_feeds.len;
    m->scale_feeds = enc_strs(a, r->scale_feeds.data, r->scale_feeds.len);
    m->n_scale_factors = r->scale_factors.len;
    m->scale_factors = r->scale_factors.data;
    if (r->has_split) {
        m->has_has_split = m->has_split = 1;
        m->has_split_fraction = m->has_split_seed = 1;
        m->split_fraction = r->split_fraction;
        m->split_seed = r->split_seed;
    }
    m->has_part = 1;
    m->part = (Fluidc__ReaderPart)r->part;
    return m;
}

static Fluidc__ReaderDesc *enc_reader_desc(FlArena *a, const FlReaderDesc *r) {
    Fluidc__ReaderDesc *m = fl_arena_alloc(a, sizeof *m);
    fluidc__reader_desc__init(m);
    m->kind = enc_str(r->kind);
    m->n_inputs = r->inputs.len;
    m->inputs = r->inputs.data;
    m->dataset = r->dataset;
    m->part = r->part;
    m->has_n = r->n != 0;
    m->n = r->n;
    m->has_drop_last = m->drop_last = r->drop_last;
    m->has_check_alignment = m->check_alignment = r->check_alignment;
    m->n_words = r->words.len;
    m->words = enc_strs(a, r->words.data, r->words.len);
    m->n_word_ids = r->word_ids.len;
    m->word_ids = r->word_ids.data;
    m->has_data_type = r->data_type != 0;
    m->data_type = r->data_type;
    m->has_n2 = r->n2 != 0;
    m->n2 = r->n2;
    m->lang = r->lang;
    m->n_files = r->files.len;
    m->files = enc_strs(a, r->files.data, r->files.len);
    m->n_slot_names = r->slot_names.len;
    m->slot_names = enc_strs(a, r->slot_names.data, r->slot_names.len);
    m->n_slot_types = r->slot_types.len;
    m->slot_types = enc_strs(a, r->slot_types.data, r->slot_types.len);
    m->n_slot_widths = r->slot_widths.len;
    m->slot_widths = r->slot_widths.data;
    m->n_slot_keys = r->slot_keys.len;
    m->slot_keys = r->slot_keys.data;
    m->line_format = r->line_format;
    m->has_gzip = m->gzip = r->gzip;
    m->n_shape_concat = r->shape_concat.len;
    m->shape_concat = r->shape_concat.data;
    m->n_ranks = r->ranks.len;
    m->ranks = r->ranks.data;
    m->n_lod_levels = r->lod_levels.len;
    m->lod_levels = r->lod_levels.data;
    m->has_pass_num = r->pass_num != 0;
    m->pass_num = r->pass_num;
    return m;
}

static Fluidc__Bundle *enc_bundle(FlArena *a, const FlBundle *b, const char *dir) {
    Fluidc__Bundle *m = fl_arena_alloc(a, sizeof *m);
    fluidc__bundle__init(m);
    m->startup = enc_program(a, b->startup);
    m->main = enc_program(a, b->main);
    const FlRunSpec *r = &b->run;
    Fluidc__RunSpec *rm = m->run = fl_arena_alloc(a, sizeof *rm);
    fluidc__run_spec__init(rm);
    rm->has_present = 1;
    rm->present = r->present;
    rm->reader = enc_reader(a, r->reader, dir);
    rm->test_reader = enc_reader(a, r->test_reader, dir);
    rm->has_batch_size = rm->has_epochs = rm->has_seed = 1;
    rm->batch_size = r->batch_size;
    rm->epochs = r->epochs;
    rm->seed = r->seed;
    rm->n_fetch_names = r->fetch_names.len;
    rm->fetch_names = enc_strs(a, r->fetch_names.data, r->fetch_names.len);
    rm->n_fetch_vars = r->fetch_vars.len;
    rm->fetch_vars = enc_strs(a, r->fetch_vars.data, r->fetch_vars.len);
    if (r->profile.present) {
        Fluidc__ProfileSpec *pm = rm->profile = fl_arena_alloc(a, sizeof *pm);
        fluidc__profile_spec__init(pm);
        pm->state = r->profile.state;
        pm->sorted_key = r->profile.sorted_key ? r->profile.sorted_key : "";
        pm->path = r->profile.path ? r->profile.path : "";
    }
    m->n_source_paths = b->source_paths.len;
    m->source_paths = enc_strs(a, b->source_paths.data, b->source_paths.len);
    if (b->driver) m->driver = enc_program(a, b->driver);
    m->n_readers = b->readers.len;
    if (b->readers.len) m->readers = fl_arena_alloc(a, fl_mul_size(b->readers.len, sizeof *m->readers));
    for (size_t i = 0; i < b->readers.len; i++) m->readers[i] = enc_reader_desc(a, b->readers.data[i]);
    m->n_programs = b->programs.len;
    if (b->programs.len) m->programs = fl_arena_alloc(a, fl_mul_size(b->programs.len, sizeof *m->programs));
    for (size_t i = 0; i < b->programs.len; i++) {
        Fluidc__NamedProgram *np = m->programs[i] = fl_arena_alloc(a, sizeof *np);
        fluidc__named_program__init(np);
        np->name = b->programs.data[i].name;
        np->program = enc_program(a, b->programs.data[i].program);
    }
    if (b->inference) {
        Fluidc__InferenceSpec *im = m->inference = fl_arena_alloc(a, sizeof *im);
        fluidc__inference_spec__init(im);
        im->n_feeds = b->inference->feeds.len;
        im->feeds = enc_strs(a, b->inference->feeds.data, b->inference->feeds.len);
        im->n_targets = b->inference->targets.len;
        im->targets = enc_strs(a, b->inference->targets.data, b->inference->targets.len);
    }
    m->load = b->load;
    m->role = b->role;
    m->has_role_index = 1;
    m->role_index = b->role_index;
    return m;
}

static Fluidc__Plan *enc_plan(FlArena *a, const FlPlan *p, const char *dir) {
    Fluidc__Plan *m = fl_arena_alloc(a, sizeof *m);
    fluidc__plan__init(m);
    m->mode = p->mode;
    m->has_pservers = m->has_trainers = 1;
    m->pservers = p->pservers;
    m->trainers = p->trainers;
    m->n_roles = p->roles.len;
    if (p->roles.len) m->roles = fl_arena_alloc(a, fl_mul_size(p->roles.len, sizeof *m->roles));
    for (size_t i = 0; i < p->roles.len; i++) m->roles[i] = enc_bundle(a, p->roles.data[i], dir);
    m->n_rank_role = p->rank_role.len;
    m->rank_role = p->rank_role.data;
    return m;
}

static uint8_t *encode(const char *magic, uint32_t version, const FlBundle *b, const FlPlan *p,
                       const char *dir, size_t *len) {
    FlArena a;
    fl_arena_init(&a);
    Fluidc__FlFile f = FLUIDC__FL_FILE__INIT;
    f.magic = (char *)magic;
    if (version) {
        f.has_version = 1;
        f.version = version;
    }
    if (b) f.bundle = enc_bundle(&a, b, dir);
    if (p) f.plan = enc_plan(&a, p, dir);
    size_t n = fluidc__fl_file__get_packed_size(&f);
    uint8_t *buf = fl_xmalloc(n ? n : 1);
    size_t w = fluidc__fl_file__pack(&f, buf);
    FL_ASSERT(w == n);
    fl_arena_fini(&a);
    *len = n;
    return buf;
}

uint8_t *fl_ir_encode_file_raw(const char *magic, uint32_t version, const FlBundle *b,
                               const FlPlan *p, size_t *len) {
    return encode(magic, version, b, p, NULL, len);
}

uint8_t *fl_ir_encode_bundle_version(const FlBundle *b, uint32_t version, size_t *len) {
    return fl_ir_encode_file_raw(FL_IR_MAGIC, version, b, NULL, len);
}

uint32_t fl_ir_format_version(const FlBundle *b, const FlPlan *p) {
    bool driver = b && (b->driver || b->readers.len || b->programs.len || b->inference || b->load);
    for (size_t i = 0; p && i < p->roles.len; i++)
        driver = driver || p->roles.data[i]->driver || p->roles.data[i]->readers.len || p->roles.data[i]->programs.len ||
                 p->roles.data[i]->inference || p->roles.data[i]->load;
    return driver ? FL_IR_FORMAT_VERSION : FL_IR_FORMAT_BASE;
}

uint8_t *fl_ir_encode_bundle(const FlBundle *b, size_t *len) {
    return fl_ir_encode_file_raw(FL_IR_MAGIC, fl_ir_format_version(b, NULL), b, NULL, len);
}

uint8_t *fl_ir_encode_plan(const FlPlan *p, size_t *len) {
    return fl_ir_encode_file_raw(FL_IR_MAGIC, fl_ir_format_version(NULL, p), NULL, p, len);
}

/* The absolute directory a file at path is (to be) in; NULL when it cannot be resolved. */
static char *file_dir(const char *path) {
    char *d = fl_path_dir(path);
    char *abs = realpath(d, NULL);
    free(d);
    return abs;
}

static FlStatus write_file(const FlBundle *b, const FlPlan *p, const char *path, FlErr *e) {
    char *dir = file_dir(path);
    size_t len;
    uint8_t *data = encode(FL_IR_MAGIC, fl_ir_format_version(b, p), b, p, dir, &len);
    free(dir);
    FlStatus st = fl_write_file(path, data, len, e);
    free(data);
    return st;
}

FlStatus fl_ir_bundle_write(const FlBundle *b, const char *path, FlErr *e) {
    FlErr sub;
    if (fl_ir_validate_bundle(b, &sub))
        return fl_err(e, "not writing '%s': the bundle is invalid: %s", path, sub.msg);
    return write_file(b, NULL, path, e);
}

FlStatus fl_ir_plan_write(const FlPlan *p, const char *path, FlErr *e) {
    FlErr sub;
    if (fl_ir_validate_plan(p, &sub))
        return fl_err(e, "not writing '%s': the plan is invalid: %s", path, sub.msg);
    return write_file(NULL, p, path, e);
}

/* ---- protobuf-c -> IR (decoding) ----
 * The dec_* functions fill IR structures that their caller already owns, so that on error the
 * caller frees one tree. Messages name the place (block, var, op) without the file. */

static char *dec_str(const char *s) {
    return fl_xstrdup(s ? s : "");
}

static char **dec_strs(char *const *v, size_t n) {
    char **r = fl_xmalloc(fl_mul_size(n ? n : 1, sizeof(char *)));
    for (size_t i = 0; i < n; i++) r[i] = dec_str(v[i]);
    return r;
}

/* Appends copies of the n strings v to the FL_VEC(char *) *vec. */
#define DEC_STRVEC(vec, v, n)                                                             \
    do {                                                                                  \
        FL_VEC_RESERVE((vec), (vec)->len + (n));                                          \
        for (size_t i_ = 0; i_ < (n); i_++) (vec)->data[(vec)->len++] = dec_str((v)[i_]); \
    } while (0)

#define DEC_INTVEC(vec, v, n)                                                             \
    do {                                                                                  \
        FL_VEC_RESERVE((vec), (vec)->len + (n));                                          \
        for (size_t i_ = 0; i_ < (n); i_++) (vec)->data[(vec)->len++] = (v)[i_];          \
    } while (0)

static int64_t *dec_ints(const int64_t *v, size_t n) {
    int64_t *r = fl_xmalloc(fl_mul_size(n ? n : 1, sizeof(int64_t)));
    if (n) memcpy(r, v, n * sizeof(int64_t));
    return r;
}

static double *dec_floats(const double *v, size_t n) {
    double *r = fl_xmalloc(fl_mul_size(n ? n : 1, sizeof(double)));
    if (n) memcpy(r, v, n * sizeof(double));
    return r;
}

static FlLoc dec_loc(const Fluidc__Loc *m) {
    if (!m) return FL_LOC_NONE;
    return (FlLoc){m->file, m->line, m->col, m->len};
}

static FlStatus dec_var(FlBlock *b, const Fluidc__VarDesc *m, FlErr *e) {
    const char *name = m->name ? m->name : "";
    if (!*name) return fl_err(e, "block %d: a var has no name", b->idx);
    if (m->n_shape > FL_IR_MAX_DIMS)
        return fl_err(e, "block %d, var '%s': rank %zu is more than %d", b->idx, name, m->n_shape,
                      FL_IR_MAX_DIMS);
    FlVarDesc *v = fl_ir_var_add(b, name);
    if (!v) return fl_err(e, "block %d: var '%s' is declared twice", b->idx, name);
    v->kind = (FlVarKind)m->kind;
    v->dtype = (FlDType)m->dtype;
    fl_ir_var_set_shape(v, (int)m->n_shape, m->shape);
    v->persistable = m->persistable;
    v->trainable = m->trainable;
    v->stop_gradient = m->stop_gradient;
    v->fed = m->fed;
    v->capacity = m->capacity;
    v->elem_chans = m->elem_chans;
    if (m->n_lod > FL_IR_MAX_LOD)
        return fl_err(e, "block %d, var '%s': %zu LoD levels (at most %d)", b->idx, name, m->n_lod, FL_IR_MAX_LOD);
    for (size_t i = 0; i < m->n_lod; i++)
        if (!m->lod[i] || !*m->lod[i])
            return fl_err(e, "block %d, var '%s': LoD level %zu names no var", b->idx, name, i);
    fl_ir_var_set_lod(v, (int)m->n_lod, (const char *const *)m->lod);
    v->loc = dec_loc(m->loc);
    return FL_OK;
}

static void dec_slot(FlSlot *s, const Fluidc__Slot *m) {
    s->name = dec_str(m->name);
    s->nargs = m->n_args;
    s->args = fl_xmalloc(fl_mul_size(fl_ir_args_cap(m->n_args), sizeof(char *)));
    for (size_t j = 0; j < m->n_args; j++) s->args[j] = dec_str(m->args[j]);
}

static void dec_attr(FlAttr *a, const Fluidc__Attr *m) {
    memset(a, 0, sizeof *a);
    a->name = dec_str(m->name);
    a->type = (FlAttrType)m->type;
    switch ((int)m->type) {
    case FL_ATTR_INT:
    case FL_ATTR_BOOL:
    case FL_ATTR_BLOCK: a->i = m->i; break;
    case FL_ATTR_FLOAT: a->f = m->f; break;
    case FL_ATTR_STRING: a->s = dec_str(m->s); break;
    case FL_ATTR_INTS:
    case FL_ATTR_BLOCKS:
        a->ints = dec_ints(m->ints, m->n_ints);
        a->n = m->n_ints;
        break;
    case FL_ATTR_FLOATS:
        a->floats = dec_floats(m->floats, m->n_floats);
        a->n = m->n_floats;
        break;
    case FL_ATTR_STRINGS:
        a->strs = dec_strs(m->strs, m->n_strs);
        a->n = m->n_strs;
        break;
    default: break; /* an unknown type: the validator reports it */
    }
}

static FlOpDesc *dec_op(FlBlock *b, const Fluidc__OpDesc *m) {
    FlOpDesc *op = fl_ir_op_append(b, m->type ? m->type : "");
    FL_VEC_RESERVE(&op->ins, m->n_inputs);
    for (size_t i = 0; i < m->n_inputs; i++) dec_slot(&op->ins.data[op->ins.len++], m->inputs[i]);
    FL_VEC_RESERVE(&op->outs, m->n_outputs);
    for (size_t i = 0; i < m->n_outputs; i++)
        dec_slot(&op->outs.data[op->outs.len++], m->outputs[i]);
    FL_VEC_RESERVE(&op->attrs, m->n_attrs);
    for (size_t i = 0; i < m->n_attrs; i++) dec_attr(&op->attrs.data[op->attrs.len++], m->attrs[i]);
    op->loc = dec_loc(m->loc);
    return op;
}

static FlStatus dec_program(const Fluidc__ProgramDesc *m, FlProgram *p, FlErr *e) {
    FL_VEC_RESERVE(&p->blocks, m->n_blocks);
    for (size_t i = 0; i < m->n_blocks; i++) {
        const Fluidc__BlockDesc *bm = m->blocks[i];
        if (!bm->has_idx || bm->idx < 0 || (size_t)bm->idx != i)
            return fl_err(e, "block %zu has index %d", i, bm->has_idx ? (int)bm->idx : -1);
        FlBlock *b = fl_ir_block_push(p, bm->has_parent_idx ? bm->parent_idx : INT32_MIN);
        FL_VEC_RESERVE(&b->vars, bm->n_vars);
        for (size_t j = 0; j < bm->n_vars; j++)
            if (dec_var(b, bm->vars[j], e)) return FL_ERROR;
        FL_VEC_RESERVE(&b->ops, bm->n_ops);
        for (size_t j = 0; j < bm->n_ops; j++) dec_op(b, bm->ops[j]);
    }
    return FL_OK;
}

static FlStatus dec_reader(const Fluidc__ReaderSpec *m, FlReaderSpec **out, const char *which,
                           FlErr *e) {
    if (!m) return FL_OK;
    FlReaderSpec *r = *out = fl_xcalloc(1, sizeof *r);
    r->path = dec_str(m->path);
    r->base_dir = dec_str(m->base_dir);
    r->skip_rows = m->skip_rows;
    if (m->sep < 0 || m->sep > 255)
        return fl_err(e, "%s: separator %d is not a byte", which, (int)m->sep);
    r->sep = (char)(unsigned char)m->sep;
    FL_VEC_RESERVE(&r->feeds, m->n_feeds);
    for (size_t i = 0; i < m->n_feeds; i++) {
        const Fluidc__FeedCols *fm = m->feeds[i];
        r->feeds.data[r->feeds.len++] =
            (FlFeedCols){dec_str(fm->feed), (FlDType)fm->dtype, dec_ints(fm->cols, fm->n_cols),
                         fm->n_cols, fm->lod_level};
    }
    DEC_STRVEC(&r->normalize, m->normalize, m->n_normalize);
    DEC_STRVEC(&r->scale_feeds, m->scale_feeds, m->n_scale_feeds);
    FL_VEC_RESERVE(&r->scale_factors, m->n_scale_factors);
    for (size_t i = 0; i < m->n_scale_factors; i++)
        r->scale_factors.data[r->scale_factors.len++] = m->scale_factors[i];
    r->has_split = m->has_split;
    if (r->has_split) { /* (the writer writes them only then) */
        r->split_fraction = m->split_fraction;
        r->split_seed = m->split_seed;
    }
    r->part = (FlReaderPart)m->part;
    return FL_OK;
}

/* A new bundle from m (NULL and e set on error). */
static FlBundle *dec_bundle(const Fluidc__Bundle *m, FlErr *e) {
    FlBundle *b = fl_xcalloc(1, sizeof *b);
    FlErr sub;
    if (!m->startup) {
        fl_err(e, "the bundle has no startup program");
        goto fail;
    }
    if (!m->main) {
        fl_err(e, "the bundle has no main program");
        goto fail;
    }
    b->startup = fl_ir_program_empty();
    if (dec_program(m->startup, b->startup, &sub)) {
        fl_err(e, "startup program: %s", sub.msg);
        goto fail;
    }
    b->main = fl_ir_program_empty();
    if (dec_program(m->main, b->main, &sub)) {
        fl_err(e, "main program: %s", sub.msg);
        goto fail;
    }
    if (m->driver) {
        b->driver = fl_ir_program_empty();
        if (dec_program(m->driver, b->driver, &sub)) {
            fl_err(e, "driver program: %s", sub.msg);
            goto fail;
        }
    }
    for (size_t i = 0; i < m->n_programs; i++) {
        const Fluidc__NamedProgram *np = m->programs[i];
        if (!np->program) {
            fl_err(e, "named program %zu has no program", i);
            goto fail;
        }
        FlProgram *p = fl_ir_program_empty();
        fl_ir_bundle_add_program(b, np->name ? np->name : "", p);
        if (dec_program(np->program, p, &sub)) {
            fl_err(e, "program '%s': %s", np->name ? np->name : "", sub.msg);
            goto fail;
        }
    }
    DEC_STRVEC(&b->source_paths, m->source_paths, m->n_source_paths);
    FL_VEC_RESERVE(&b->readers, m->n_readers);
    for (size_t i = 0; i < m->n_readers; i++) {
        const Fluidc__ReaderDesc *rm = m->readers[i];
        FlReaderDesc *r = fl_xcalloc(1, sizeof *r);
        b->readers.data[b->readers.len++] = r;
        r->kind = dec_str(rm->kind);
        FL_VEC_RESERVE(&r->inputs, rm->n_inputs);
        for (size_t j = 0; j < rm->n_inputs; j++) r->inputs.data[r->inputs.len++] = rm->inputs[j];
        r->dataset = rm->dataset ? dec_str(rm->dataset) : NULL;
        r->part = rm->part ? dec_str(rm->part) : NULL;
        r->n = rm->n;
        r->drop_last = rm->drop_last;
        r->check_alignment = rm->check_alignment;
        DEC_STRVEC(&r->words, rm->words, rm->n_words);
        FL_VEC_RESERVE(&r->word_ids, rm->n_word_ids);
        for (size_t j = 0; j < rm->n_word_ids; j++) r->word_ids.data[r->word_ids.len++] = rm->word_ids[j];
        r->data_type = rm->data_type;
        r->n2 = rm->n2;
        r->lang = rm->lang ? dec_str(rm->lang) : NULL;
        DEC_STRVEC(&r->files, rm->files, rm->n_files);
        DEC_STRVEC(&r->slot_names, rm->slot_names, rm->n_slot_names);
        DEC_STRVEC(&r->slot_types, rm->slot_types, rm->n_slot_types);
        FL_VEC_RESERVE(&r->slot_widths, rm->n_slot_widths);
        for (size_t j = 0; j < rm->n_slot_widths; j++) r->slot_widths.data[r->slot_widths.len++] = rm->slot_widths[j];
        FL_VEC_RESERVE(&r->slot_keys, rm->n_slot_keys);
        for (size_t j = 0; j < rm->n_slot_keys; j++) r->slot_keys.data[r->slot_keys.len++] = rm->slot_keys[j];
        r->line_format = rm->line_format ? dec_str(rm->line_format) : NULL;
        r->gzip = rm->gzip;
        DEC_INTVEC(&r->shape_concat, rm->shape_concat, rm->n_shape_concat);
        DEC_INTVEC(&r->ranks, rm->ranks, rm->n_ranks);
        DEC_INTVEC(&r->lod_levels, rm->lod_levels, rm->n_lod_levels);
        r->pass_num = rm->pass_num;
    }
    if (m->inference) {
        b->inference = fl_xcalloc(1, sizeof *b->inference);
        DEC_STRVEC(&b->inference->feeds, m->inference->feeds, m->inference->n_feeds);
        DEC_STRVEC(&b->inference->targets, m->inference->targets, m->inference->n_targets);
    }
    b->load = m->load ? dec_str(m->load) : NULL;
    b->role = dec_str(m->role);
    b->role_index = m->role_index;
    const Fluidc__RunSpec *rm = m->run;
    if (rm) {
        FlRunSpec *r = &b->run;
        r->present = rm->present;
        if (dec_reader(rm->reader, &r->reader, "run spec reader", e)) goto fail;
        if (dec_reader(rm->test_reader, &r->test_reader, "run spec test reader", e)) goto fail;
        r->batch_size = rm->batch_size;
        r->epochs = rm->epochs;
        r->seed = rm->seed;
        DEC_STRVEC(&r->fetch_names, rm->fetch_names, rm->n_fetch_names);
        DEC_STRVEC(&r->fetch_vars, rm->fetch_vars, rm->n_fetch_vars);
        if (rm->profile) {
            r->profile.present = true;
            r->profile.state = dec_str(rm->profile->state);
            r->profile.sorted_key = rm->profile->sorted_key && *rm->profile->sorted_key ? dec_str(rm->profile->sorted_key) : NULL;
            r->profile.path = rm->profile->path && *rm->profile->path ? dec_str(rm->profile->path) : NULL;
        }
    }
    return b;
fail:
    fl_ir_bundle_free(b);
    return NULL;
}

static FlPlan *dec_plan(const Fluidc__Plan *m, FlErr *e) {
    FlPlan *p = fl_xcalloc(1, sizeof *p);
    FlErr sub;
    p->mode = dec_str(m->mode);
    p->pservers = m->pservers;
    p->trainers = m->trainers;
    FL_VEC_RESERVE(&p->roles, m->n_roles);
    for (size_t i = 0; i < m->n_roles; i++) {
        FlBundle *b = dec_bundle(m->roles[i], &sub);
        if (!b) {
            fl_err(e, "role %zu: %s", i, sub.msg);
            fl_ir_plan_free(p);
            return NULL;
        }
        p->roles.data[p->roles.len++] = b;
    }
    FL_VEC_RESERVE(&p->rank_role, m->n_rank_role);
    for (size_t i = 0; i < m->n_rank_role; i++)
        p->rank_role.data[p->rank_role.len++] = m->rank_role[i];
    return p;
}

static const uint8_t magic_prefix[] = {0x0a, 6, 'f', 'l', 'u', 'i', 'd', 'c'};

/* `who` names the input in messages: "'path'" or "input". */
static FlStatus decode(const uint8_t *data, size_t len, const char *who, FlBundle **bundle,
                       FlPlan **plan, FlErr *e) {
    *bundle = NULL;
    *plan = NULL;
    if (len == 0) return fl_err(e, "%s is empty (not a fluidc file)", who);
    Fluidc__FlFile *f = fluidc__fl_file__unpack(NULL, len, data);
    if (!f) {
        if (len >= sizeof magic_prefix && memcmp(data, magic_prefix, sizeof magic_prefix) == 0)
            return fl_err(e, "%s is truncated or corrupt (it does not parse as a fluidc file)",
                          who);
        return fl_err(e, "%s is not a fluidc file", who);
    }
    FlStatus st = FL_ERROR;
    FlErr sub;
    if (!f->magic || strcmp(f->magic, FL_IR_MAGIC) != 0) {
        fl_err(e, "%s is not a fluidc file", who);
        goto done;
    }
    if (!f->has_version || f->version == 0) {
        fl_err(e, "%s has no valid format version", who);
        goto done;
    }
    if (f->version > FL_IR_FORMAT_VERSION) {
        fl_err(e, "%s was written by a newer fluidc (format version %u; this one reads up to %d)",
               who, (unsigned)f->version, FL_IR_FORMAT_VERSION);
        goto done;
    }
    if (f->bundle && f->plan) {
        fl_err(e, "%s holds both a bundle and a plan (a file holds exactly one)", who);
        goto done;
    }
    if (!f->bundle && !f->plan) {
        fl_err(e, "%s holds neither a bundle nor a plan (truncated?)", who);
        goto done;
    }
    if (f->bundle) {
        FlBundle *b = dec_bundle(f->bundle, &sub);
        if (!b || fl_ir_validate_bundle(b, &sub)) {
            fl_ir_bundle_free(b);
            fl_err(e, "%s is invalid: %s", who, sub.msg);
            goto done;
        }
        *bundle = b;
    } else {
        FlPlan *p = dec_plan(f->plan, &sub);
        if (!p || fl_ir_validate_plan(p, &sub)) {
            fl_ir_plan_free(p);
            fl_err(e, "%s is invalid: %s", who, sub.msg);
            goto done;
        }
        *plan = p;
    }
    st = FL_OK;
done:
    fluidc__fl_file__free_unpacked(f, NULL);
    return st;
}

FlStatus fl_ir_decode(const uint8_t *data, size_t len, FlBundle **bundle, FlPlan **plan,
                      FlErr *e) {
    return decode(data, len, "input", bundle, plan, e);
}

static void resolve_reader(FlReaderSpec *r, const char *dir) {
    if (!r || !r->base_dir || r->base_dir[0] == '/') return;
    char *abs = fl_path_join(dir, r->base_dir);
    free(r->base_dir);
    r->base_dir = abs;
}

static void resolve_dirs(FlBundle *b, const char *dir) {
    resolve_reader(b->run.reader, dir);
    resolve_reader(b->run.test_reader, dir);
}

void fl_ir_bundle_set_data_dir(FlBundle *b, const char *dir) {
    FlReaderSpec *rs[] = {b->run.reader, b->run.test_reader};
    for (size_t i = 0; i < 2; i++)
        if (rs[i]) {
            free(rs[i]->base_dir);
            rs[i]->base_dir = fl_xstrdup(dir);
        }
}

FlStatus fl_ir_read(const char *path, FlBundle **bundle, FlPlan **plan, FlErr *e) {
    *bundle = NULL;
    *plan = NULL;
    size_t len;
    char *data = fl_read_file(path, &len, e);
    if (!data) return FL_ERROR;
    FlBuf who = {0};
    fl_buf_printf(&who, "'%s'", path);
    FlStatus st = decode((const uint8_t *)data, len, fl_buf_str(&who), bundle, plan, e);
    fl_buf_free(&who);
    free(data);
    if (st == FL_OK) { /* relative reader dirs are relative to the file's own directory */
        char *dir = file_dir(path);
        if (dir) {
            if (*bundle) resolve_dirs(*bundle, dir);
            for (size_t i = 0; *plan && i < (*plan)->roles.len; i++) resolve_dirs((*plan)->roles.data[i], dir);
        }
        free(dir);
    }
    return st;
}
