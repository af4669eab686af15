/* ir.c: the in-memory IR: programs, blocks, vars, ops, attributes, run specs, bundles, plans,
 * and their structural validation.
 *
 * Invariants: every FlBlock's var_index maps exactly the names of its vars (keys are the vars'
 * own name strings, so a var's name never changes while it is in a block); blocks[i]->idx == i.
 * Slot arg arrays have an implicit capacity: the smallest power of two >= nargs (see grow_args),
 * so that appending is amortised O(1) without a capacity field in FlSlot.
 * File conversion lives in ir_file.c, printing in ir_show.c.
 */
#include "compiler/ir/ir.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/ir/ir_impl.h"
#include "compiler/ir/rules.h"

/* ---- slots ---- */

size_t fl_ir_args_cap(size_t n) {
    size_t c = 1;
    while (c < n) c = fl_mul_size(c, 2);
    return c;
}

static void grow_args(FlSlot *s) {
    size_t cap = fl_ir_args_cap(s->nargs);
    if (s->args && s->nargs < cap) return;
    size_t ncap = s->args ? fl_mul_size(cap, 2) : cap;
    s->args = fl_xrealloc(s->args, fl_mul_size(ncap, sizeof(char *)));
}

static void slot_fini(FlSlot *s) {
    free(s->name);
    for (size_t i = 0; i < s->nargs; i++) free(s->args[i]);
    free(s->args);
}

static void slot_copy(FlSlot *dst, const FlSlot *src) {
    dst->name = fl_xstrdup(src->name);
    dst->nargs = src->nargs;
    dst->args = fl_xmalloc(fl_mul_size(fl_ir_args_cap(src->nargs), sizeof(char *)));
    for (size_t i = 0; i < src->nargs; i++) dst->args[i] = fl_xstrdup(src->args[i]);
}

static FlSlot *slot_find(FlSlot *slots, size_t n, const char *name) {
    for (size_t i = 0; i < n; i++)
        if (strcmp(slots[i].name, name) == 0) return &slots[i];
    return NULL;
}

void fl_ir_slot_set_arg(FlSlot *s, size_t i, const char *arg) {
    FL_ASSERT(i < s->nargs);
    char *a = fl_xstrdup(arg);
    free(s->args[i]);
    s->args[i] = a;
}

void fl_ir_slot_clear(FlSlot *s) {
    for (size_t i = 0; i < s->nargs; i++) free(s->args[i]);
    free(s->args);
    s->args = NULL;
    s->nargs = 0;
}

#define SLOT_GET_OR_ADD(vec, slot_name, out)                                              \
    do {                                                                                  \
        (out) = slot_find((vec)->data, (vec)->len, (slot_name));                          \
        if (!(out)) {                                                                     \
            FL_VEC_PUSH((vec), ((FlSlot){fl_xstrdup(slot_name), NULL, 0}));                \
            (out) = &(vec)->data[(vec)->len - 1];                                         \
        }                                                                                 \
    } while (0)

static void slot_push(FlSlot *s, const char *arg) {
    grow_args(s);
    s->args[s->nargs++] = fl_xstrdup(arg);
}

void fl_ir_op_add_input(FlOpDesc *op, const char *slot, const char *arg) {
    FlSlot *s;
    SLOT_GET_OR_ADD(&op->ins, slot, s);
    slot_push(s, arg);
}

void fl_ir_op_add_output(FlOpDesc *op, const char *slot, const char *arg) {
    FlSlot *s;
    SLOT_GET_OR_ADD(&op->outs, slot, s);
    slot_push(s, arg);
}

void fl_ir_op_add_input_slot(FlOpDesc *op, const char *slot) {
    FlSlot *s;
    SLOT_GET_OR_ADD(&op->ins, slot, s);
    (void)s;
}

void fl_ir_op_add_output_slot(FlOpDesc *op, const char *slot) {
    FlSlot *s;
    SLOT_GET_OR_ADD(&op->outs, slot, s);
    (void)s;
}

FlSlot *fl_ir_op_input(const FlOpDesc *op, const char *slot) {
    return slot_find(op->ins.data, op->ins.len, slot);
}

FlSlot *fl_ir_op_output(const FlOpDesc *op, const char *slot) {
    return slot_find(op->outs.data, op->outs.len, slot);
}

const char *fl_ir_op_input1(const FlOpDesc *op, const char *slot) {
    FlSlot *s = fl_ir_op_input(op, slot);
    return s && s->nargs ? s->args[0] : NULL;
}

const char *fl_ir_op_output1(const FlOpDesc *op, const char *slot) {
    FlSlot *s = fl_ir_op_output(op, slot);
    return s && s->nargs ? s->args[0] : NULL;
}

/* ---- attributes ---- */

void fl_ir_attr_fini(FlAttr *a) {
    free(a->name);
    free(a->s);
    free(a->ints);
    free(a->floats);
    if (a->strs)
        for (size_t i = 0; i < a->n; i++) free(a->strs[i]);
    free(a->strs);
    memset(a, 0, sizeof *a);
}

/* Heap copies of n values (at least one element is allocated, so n == 0 gives a non-NULL). */
static int64_t *dup_ints(const int64_t *v, size_t n) {
    int64_t *r = fl_xmalloc(fl_mul_size(n ? n : 1, sizeof(int64_t)));
    if (n) memcpy(r, v, n * sizeof(int64_t));
    return r;
}

static double *dup_floats(const double *v, size_t n) {
    double *r = fl_xmalloc(fl_mul_size(n ? n : 1, sizeof(double)));
    if (n) memcpy(r, v, n * sizeof(double));
    return r;
}

static char **dup_strs(const char *const *v, size_t n) {
    char **r = fl_xmalloc(fl_mul_size(n ? n : 1, sizeof(char *)));
    for (size_t i = 0; i < n; i++) r[i] = fl_xstrdup(v[i]);
    return r;
}

static void attr_copy(FlAttr *dst, const FlAttr *src) {
    *dst = *src;
    dst->name = fl_xstrdup(src->name);
    dst->s = src->s ? fl_xstrdup(src->s) : NULL;
    dst->ints = src->ints ? dup_ints(src->ints, src->n) : NULL;
    dst->floats = src->floats ? dup_floats(src->floats, src->n) : NULL;
    dst->strs = src->strs ? dup_strs((const char *const *)src->strs, src->n) : NULL;
}

FlAttr *fl_ir_op_attr(const FlOpDesc *op, const char *name) {
    for (size_t i = 0; i < op->attrs.len; i++)
        if (strcmp(op->attrs.data[i].name, name) == 0) return &op->attrs.data[i];
    return NULL;
}

/* The attribute `name`, emptied and typed `t` (an existing one is reused in place, so that the
 * attribute keeps its position). */
static FlAttr *attr_reset(FlOpDesc *op, const char *name, FlAttrType t) {
    FlAttr *a = fl_ir_op_attr(op, name);
    if (a) {
        char *keep = a->name;
        a->name = NULL;
        fl_ir_attr_fini(a);
        a->name = keep;
    } else {
        FL_VEC_PUSH(&op->attrs, ((FlAttr){.name = fl_xstrdup(name)}));
        a = &op->attrs.data[op->attrs.len - 1];
    }
    a->type = t;
    return a;
}

void fl_ir_op_set_int(FlOpDesc *op, const char *name, int64_t v) {
    attr_reset(op, name, FL_ATTR_INT)->i = v;
}

void fl_ir_op_set_float(FlOpDesc *op, const char *name, double v) {
    attr_reset(op, name, FL_ATTR_FLOAT)->f = v;
}

void fl_ir_op_set_string(FlOpDesc *op, const char *name, const char *v) {
    char *s = fl_xstrdup(v); /* before the reset: v may be the old value */
    attr_reset(op, name, FL_ATTR_STRING)->s = s;
}

void fl_ir_op_set_bool(FlOpDesc *op, const char *name, bool v) {
    attr_reset(op, name, FL_ATTR_BOOL)->i = v ? 1 : 0;
}

void fl_ir_op_set_ints(FlOpDesc *op, const char *name, const int64_t *v, size_t n) {
    int64_t *c = dup_ints(v, n);
    FlAttr *a = attr_reset(op, name, FL_ATTR_INTS);
    a->ints = c;
    a->n = n;
}

void fl_ir_op_set_floats(FlOpDesc *op, const char *name, const double *v, size_t n) {
    double *c = dup_floats(v, n);
    FlAttr *a = attr_reset(op, name, FL_ATTR_FLOATS);
    a->floats = c;
    a->n = n;
}

void fl_ir_op_set_strings(FlOpDesc *op, const char *name, const char *const *v, size_t n) {
    char **c = dup_strs(v, n);
    FlAttr *a = attr_reset(op, name, FL_ATTR_STRINGS);
    a->strs = c;
    a->n = n;
}

void fl_ir_op_set_block(FlOpDesc *op, const char *name, int block) {
    attr_reset(op, name, FL_ATTR_BLOCK)->i = block;
}

void fl_ir_op_set_blocks(FlOpDesc *op, const char *name, const int64_t *blocks, size_t n) {
    int64_t *c = dup_ints(blocks, n);
    FlAttr *a = attr_reset(op, name, FL_ATTR_BLOCKS);
    a->ints = c;
    a->n = n;
}

int64_t fl_ir_op_get_int(const FlOpDesc *op, const char *name, int64_t dflt) {
    FlAttr *a = fl_ir_op_attr(op, name);
    if (!a) return dflt;
    FL_ASSERT(a->type == FL_ATTR_INT || a->type == FL_ATTR_BLOCK);
    return a->i;
}

double fl_ir_op_get_float(const FlOpDesc *op, const char *name, double dflt) {
    FlAttr *a = fl_ir_op_attr(op, name);
    if (!a) return dflt;
    FL_ASSERT(a->type == FL_ATTR_FLOAT || a->type == FL_ATTR_INT);
    return a->type == FL_ATTR_FLOAT ? a->f : (double)a->i;
}

const char *fl_ir_op_get_string(const FlOpDesc *op, const char *name, const char *dflt) {
    FlAttr *a = fl_ir_op_attr(op, name);
    if (!a) return dflt;
    FL_ASSERT(a->type == FL_ATTR_STRING);
    return a->s;
}

bool fl_ir_op_get_bool(const FlOpDesc *op, const char *name, bool dflt) {
    FlAttr *a = fl_ir_op_attr(op, name);
    if (!a) return dflt;
    FL_ASSERT(a->type == FL_ATTR_BOOL);
    return a->i != 0;
}

/* ---- ops ---- */

static FlOpDesc *op_new(const char *type) {
    FlOpDesc *op = fl_xcalloc(1, sizeof *op);
    op->type = fl_xstrdup(type);
    op->loc = FL_LOC_NONE;
    return op;
}

void fl_ir_op_free(FlOpDesc *op) {
    if (!op) return;
    free(op->type);
    for (size_t i = 0; i < op->ins.len; i++) slot_fini(&op->ins.data[i]);
    for (size_t i = 0; i < op->outs.len; i++) slot_fini(&op->outs.data[i]);
    for (size_t i = 0; i < op->attrs.len; i++) fl_ir_attr_fini(&op->attrs.data[i]);
    FL_VEC_FREE(&op->ins);
    FL_VEC_FREE(&op->outs);
    FL_VEC_FREE(&op->attrs);
    free(op);
}

FlOpDesc *fl_ir_op_clone(const FlOpDesc *op) {
    FlOpDesc *c = op_new(op->type);
    c->loc = op->loc;
    FL_VEC_RESERVE(&c->ins, op->ins.len);
    for (size_t i = 0; i < op->ins.len; i++)
        slot_copy(&c->ins.data[c->ins.len++], &op->ins.data[i]);
    FL_VEC_RESERVE(&c->outs, op->outs.len);
    for (size_t i = 0; i < op->outs.len; i++)
        slot_copy(&c->outs.data[c->outs.len++], &op->outs.data[i]);
    FL_VEC_RESERVE(&c->attrs, op->attrs.len);
    for (size_t i = 0; i < op->attrs.len; i++)
        attr_copy(&c->attrs.data[c->attrs.len++], &op->attrs.data[i]);
    return c;
}

FlOpDesc *fl_ir_op_append(FlBlock *b, const char *type) {
    FlOpDesc *op = op_new(type);
    FL_VEC_PUSH(&b->ops, op);
    return op;
}

FlOpDesc *fl_ir_op_insert(FlBlock *b, size_t pos, const char *type) {
    FL_ASSERT(pos <= b->ops.len);
    FlOpDesc *op = op_new(type);
    FL_VEC_RESERVE(&b->ops, b->ops.len + 1);
    memmove(&b->ops.data[pos + 1], &b->ops.data[pos], (b->ops.len - pos) * sizeof(FlOpDesc *));
    b->ops.data[pos] = op;
    b->ops.len++;
    return op;
}

void fl_ir_ops_move_tail(FlBlock *b, size_t from, size_t to) {
    FL_ASSERT(to <= from && from <= b->ops.len);
    size_t n = b->ops.len - from;
    if (n == 0 || to == from) return;
    FlOpDesc **tail = fl_xmalloc(n * sizeof *tail);
    memcpy(tail, &b->ops.data[from], n * sizeof *tail);
    memmove(&b->ops.data[to + n], &b->ops.data[to], (from - to) * sizeof *tail);
    memcpy(&b->ops.data[to], tail, n * sizeof *tail);
    free(tail);
}

void fl_ir_op_remove(FlBlock *b, size_t pos) {
    FL_ASSERT(pos < b->ops.len);
    fl_ir_op_free(b->ops.data[pos]);
    memmove(&b->ops.data[pos], &b->ops.data[pos + 1],
            (b->ops.len - pos - 1) * sizeof(FlOpDesc *));
    b->ops.len--;
}

/* ---- vars ---- */

static void var_free(FlVarDesc *v) {
    if (!v) return;
    free(v->name);
    fl_ir_var_set_lod(v, 0, NULL);
    free(v);
}

void fl_ir_var_set_lod(FlVarDesc *v, int n, const char *const *names) {
    FL_ASSERT(n >= 0 && n <= FL_IR_MAX_LOD);
    char *keep[FL_IR_MAX_LOD] = {0};
    for (int i = 0; i < n; i++) keep[i] = fl_xstrdup(names[i]); /* names may be v's own */
    for (int i = 0; i < FL_IR_MAX_LOD; i++) {
        free(v->lod[i]);
        v->lod[i] = keep[i];
    }
    v->lod_level = n;
}

FlVarDesc *fl_ir_var_add(FlBlock *b, const char *name) {
    if (fl_map_find_str(&b->var_index, name)) return NULL;
    FlVarDesc *v = fl_xcalloc(1, sizeof *v);
    v->name = fl_xstrdup(name);
    v->kind = FL_VAR_DENSE;
    v->dtype = FL_DT_FLOAT32;
    v->loc = FL_LOC_NONE;
    FL_VEC_PUSH(&b->vars, v);
    fl_map_put_str(&b->var_index, v->name, v);
    return v;
}

FlVarDesc *fl_ir_var_find(const FlBlock *b, const char *name) {
    return fl_map_find_str(&b->var_index, name);
}

FlVarDesc *fl_ir_var_lookup(const FlProgram *p, const FlBlock *b, const char *name) {
    /* At most one step per block: a malformed parent chain cannot loop. */
    for (size_t steps = 0; b && steps <= p->blocks.len; steps++) {
        FlVarDesc *v = fl_ir_var_find(b, name);
        if (v) return v;
        if (b->parent < 0 || (size_t)b->parent >= p->blocks.len) return NULL;
        b = p->blocks.data[b->parent];
    }
    return NULL;
}

void fl_ir_block_io_init(FlBlockIo *io) {
    memset(io, 0, sizeof *io);
    fl_map_init(&io->in_seen);
    fl_map_init(&io->out_seen);
}

void fl_ir_block_io_fini(FlBlockIo *io) {
    FL_VEC_FREE(&io->ins);
    FL_VEC_FREE(&io->outs);
    fl_map_fini(&io->in_seen);
    fl_map_fini(&io->out_seen);
}

void fl_ir_block_io_add(FlBlockIo *io, bool out, const char *name) {
    FlMap *seen = out ? &io->out_seen : &io->in_seen;
    if (fl_map_find_str(seen, name)) return;
    fl_map_put_str(seen, name, (void *)name);
    if (out) FL_VEC_PUSH(&io->outs, name);
    else FL_VEC_PUSH(&io->ins, name);
}

/* Is `name` declared in b or a block between b and outer (exclusive)? */
static bool declared_inside(const FlProgram *p, const FlBlock *outer, const char *name, const FlBlock *b) {
    for (const FlBlock *x = b; x && x != outer; x = x->parent >= 0 ? fl_ir_block(p, x->parent) : NULL)
        if (fl_ir_var_find(x, name)) return true;
    return false;
}

void fl_ir_block_io(const FlProgram *p, const FlBlock *outer, const FlBlock *b, FlBlockIo *io) {
    FL_VEC(const FlOpDesc *) lis = {0}; /* the block's list_index ops, in order: most blocks have none */
    for (size_t k = 0; k < b->ops.len; k++)
        if (strcmp(b->ops.data[k]->type, "list_index") == 0) FL_VEC_PUSH(&lis, b->ops.data[k]);
    for (size_t k = 0; k < b->ops.len; k++) {
        FlOpDesc *op = b->ops.data[k];
        for (size_t s = 0; s < op->ins.len; s++)
            for (size_t i = 0; i < op->ins.data[s].nargs; i++) {
                const char *n = op->ins.data[s].args[i];
                if (!declared_inside(p, outer, n, b)) fl_ir_block_io_add(io, false, n);
            }
        for (size_t s = 0; s < op->outs.len; s++)
            for (size_t i = 0; i < op->outs.data[s].nargs; i++) {
                const char *n = op->outs.data[s].args[i];
                if (!declared_inside(p, outer, n, b)) fl_ir_block_io_add(io, true, n);
                /* writing a list_index output writes the picked var: every list item */
                if (lis.len && declared_inside(p, outer, n, b)) {
                    for (size_t q = 0; q < lis.len; q++) {
                        const FlOpDesc *li = lis.data[q];
                        if (op == li) continue;
                        const char *o = fl_ir_op_output1(li, "Out");
                        FlSlot *xs = fl_ir_op_input(li, "X");
                        if (!o || !xs || strcmp(o, n) != 0) continue;
                        for (size_t j = 0; j < xs->nargs; j++) fl_ir_block_io_add(io, true, xs->args[j]);
                    }
                }
            }
        for (size_t a = 0; a < op->attrs.len; a++) {
            FlAttr *at = &op->attrs.data[a];
            if (at->type == FL_ATTR_BLOCK) fl_ir_block_io(p, outer, fl_ir_block(p, (int)at->i), io);
            if (at->type == FL_ATTR_BLOCKS)
                for (size_t j = 0; j < at->n; j++) fl_ir_block_io(p, outer, fl_ir_block(p, (int)at->ints[j]), io);
        }
    }
    FL_VEC_FREE(&lis);
}

bool fl_ir_var_remove(FlBlock *b, const char *name) {
    FlVarDesc *v = fl_map_find_str(&b->var_index, name);
    if (!v) return false;
    fl_map_remove(&b->var_index, v->name, strlen(v->name));
    for (size_t i = 0; i < b->vars.len; i++) {
        if (b->vars.data[i] == v) {
            memmove(&b->vars.data[i], &b->vars.data[i + 1],
                    (b->vars.len - i - 1) * sizeof(FlVarDesc *));
            b->vars.len--;
            break;
        }
    }
    var_free(v);
    return true;
}

void fl_ir_var_set_shape(FlVarDesc *v, int ndim, const int64_t *shape) {
    FL_ASSERT(ndim >= 0 && ndim <= FL_IR_MAX_DIMS);
    v->ndim = ndim;
    for (int i = 0; i < FL_IR_MAX_DIMS; i++) v->shape[i] = i < ndim ? shape[i] : 0;
}

void fl_ir_var_copy(FlVarDesc *dst, const FlVarDesc *src) {
    if (dst == src) return;
    char *name = dst->name;
    fl_ir_var_set_lod(dst, 0, NULL);
    *dst = *src;
    dst->name = name;
    for (int i = 0; i < FL_IR_MAX_LOD; i++) dst->lod[i] = NULL;
    fl_ir_var_set_lod(dst, src->lod_level, (const char *const *)src->lod);
}

void fl_ir_var_set_elem(FlVarDesc *dst, const FlVarDesc *ch) {
    bool nested = ch->kind == FL_VAR_CHANNEL && ch->elem_chans > 0;
    dst->kind = nested ? FL_VAR_CHANNEL : FL_VAR_DENSE;
    dst->elem_chans = nested ? ch->elem_chans - 1 : 0;
    dst->capacity = 0; /* a received channel's own capacity is known at run time only */
    dst->dtype = ch->dtype;
    fl_ir_var_set_shape(dst, ch->ndim, ch->shape);
}

/* ---- blocks and programs ---- */

static FlBlock *block_alloc(int idx, int parent) {
    FlBlock *b = fl_xcalloc(1, sizeof *b);
    b->idx = idx;
    b->parent = parent;
    fl_map_init(&b->var_index);
    return b;
}

static void block_free(FlBlock *b) {
    if (!b) return;
    for (size_t i = 0; i < b->vars.len; i++) var_free(b->vars.data[i]);
    for (size_t i = 0; i < b->ops.len; i++) fl_ir_op_free(b->ops.data[i]);
    FL_VEC_FREE(&b->vars);
    FL_VEC_FREE(&b->ops);
    fl_map_fini(&b->var_index);
    free(b);
}

FlProgram *fl_ir_program_empty(void) {
    return fl_xcalloc(1, sizeof(FlProgram));
}

FlBlock *fl_ir_block_push(FlProgram *p, int parent) {
    FL_ASSERT(p->blocks.len < INT32_MAX);
    FlBlock *b = block_alloc((int)p->blocks.len, parent);
    FL_VEC_PUSH(&p->blocks, b);
    return b;
}

FlProgram *fl_ir_program_new(void) {
    FlProgram *p = fl_ir_program_empty();
    fl_ir_block_push(p, -1);
    return p;
}

void fl_ir_program_free(FlProgram *p) {
    if (!p) return;
    for (size_t i = 0; i < p->blocks.len; i++) block_free(p->blocks.data[i]);
    FL_VEC_FREE(&p->blocks);
    free(p);
}

FlBlock *fl_ir_block_new(FlProgram *p, int parent) {
    FL_ASSERT(parent >= 0 && (size_t)parent < p->blocks.len);
    return fl_ir_block_push(p, parent);
}

FlBlock *fl_ir_block(const FlProgram *p, int idx) {
    FL_ASSERT(idx >= 0 && (size_t)idx < p->blocks.len);
    return p->blocks.data[idx];
}

FlProgram *fl_ir_program_clone(const FlProgram *p) {
    FlProgram *c = fl_ir_program_empty();
    FL_VEC_RESERVE(&c->blocks, p->blocks.len);
    for (size_t i = 0; i < p->blocks.len; i++) {
        const FlBlock *src = p->blocks.data[i];
        FlBlock *b = block_alloc(src->idx, src->parent);
        c->blocks.data[c->blocks.len++] = b;
        FL_VEC_RESERVE(&b->vars, src->vars.len);
        for (size_t j = 0; j < src->vars.len; j++) {
            FlVarDesc *v = fl_xmalloc(sizeof *v);
            *v = *src->vars.data[j];
            v->name = fl_xstrdup(v->name);
            for (int k = 0; k < FL_IR_MAX_LOD; k++) v->lod[k] = NULL;
            fl_ir_var_set_lod(v, src->vars.data[j]->lod_level, (const char *const *)src->vars.data[j]->lod);
            b->vars.data[b->vars.len++] = v;
            fl_map_put_str(&b->var_index, v->name, v);
        }
        FL_VEC_RESERVE(&b->ops, src->ops.len);
        for (size_t j = 0; j < src->ops.len; j++)
            b->ops.data[b->ops.len++] = fl_ir_op_clone(src->ops.data[j]);
    }
    return c;
}

/* ---- run spec, readers ---- */

static void free_strvec(char **v, size_t n) {
    for (size_t i = 0; i < n; i++) free(v[i]);
    free(v);
}

void fl_ir_reader_free(FlReaderSpec *r) {
    if (!r) return;
    free(r->path);
    free(r->base_dir);
    for (size_t i = 0; i < r->feeds.len; i++) {
        free(r->feeds.data[i].feed);
        free(r->feeds.data[i].cols);
    }
    FL_VEC_FREE(&r->feeds);
    free_strvec(r->normalize.data, r->normalize.len);
    free_strvec(r->scale_feeds.data, r->scale_feeds.len);
    free(r->scale_factors.data);
    free(r);
}

/* Appends copies of the strings of the FL_VEC(char *) *src to *dst. */
#define STRVEC_COPY(dst, src)                                                             \
    do {                                                                                  \
        for (size_t i_ = 0; i_ < (src)->len; i_++)                                        \
            FL_VEC_PUSH((dst), fl_xstrdup((src)->data[i_]));                              \
    } while (0)

/* A copy of an int64 vector into dst (whose storage is not src's). */
#define INTVEC_COPY(dst, src)                                                             \
    do {                                                                                  \
        (dst)->data = NULL;                                                               \
        (dst)->len = (dst)->cap = 0;                                                      \
        for (size_t i_ = 0; i_ < (src)->len; i_++) FL_VEC_PUSH((dst), (src)->data[i_]);   \
    } while (0)

static char *dup_or_null(const char *s) {
    return s ? fl_xstrdup(s) : NULL;
}

FlReaderSpec *fl_ir_reader_clone(const FlReaderSpec *r) {
    if (!r) return NULL;
    FlReaderSpec *c = fl_xcalloc(1, sizeof *c);
    c->path = dup_or_null(r->path);
    c->base_dir = dup_or_null(r->base_dir);
    c->skip_rows = r->skip_rows;
    c->sep = r->sep;
    for (size_t i = 0; i < r->feeds.len; i++) {
        const FlFeedCols *f = &r->feeds.data[i];
        FlFeedCols fc = {dup_or_null(f->feed), f->dtype, dup_ints(f->cols, f->ncols), f->ncols, f->lod_level};
        FL_VEC_PUSH(&c->feeds, fc);
    }
    STRVEC_COPY(&c->normalize, &r->normalize);
    STRVEC_COPY(&c->scale_feeds, &r->scale_feeds);
    for (size_t i = 0; i < r->scale_factors.len; i++)
        FL_VEC_PUSH(&c->scale_factors, r->scale_factors.data[i]);
    c->has_split = r->has_split;
    c->split_fraction = r->split_fraction;
    c->split_seed = r->split_seed;
    c->part = r->part;
    return c;
}

const char *const fl_ir_profile_sort_keys[FL_IR_PROFILE_SORT_KEYS] = {NULL, "calls", "total", "max", "min", "ave"};

int fl_ir_profile_sort_key(const char *name) {
    if (!name) return 0;
    for (int i = 1; i < FL_IR_PROFILE_SORT_KEYS; i++)
        if (!strcmp(name, fl_ir_profile_sort_keys[i])) return i;
    return -1;
}

void fl_ir_run_fini(FlRunSpec *r) {
    free(r->profile.state);
    free(r->profile.sorted_key);
    free(r->profile.path);
    fl_ir_reader_free(r->reader);
    fl_ir_reader_free(r->test_reader);
    free_strvec(r->fetch_names.data, r->fetch_names.len);
    free_strvec(r->fetch_vars.data, r->fetch_vars.len);
    memset(r, 0, sizeof *r);
}

/* ---- bundles and plans ---- */

FlBundle *fl_ir_bundle_new(void) {
    FlBundle *b = fl_xcalloc(1, sizeof *b);
    b->startup = fl_ir_program_new();
    b->main = fl_ir_program_new();
    b->role = fl_xstrdup("local");
    return b;
}

void fl_ir_bundle_free(FlBundle *b) {
    if (!b) return;
    fl_ir_program_free(b->startup);
    fl_ir_program_free(b->main);
    fl_ir_program_free(b->driver);
    for (size_t i = 0; i < b->programs.len; i++) {
        free(b->programs.data[i].name);
        fl_ir_program_free(b->programs.data[i].program);
    }
    FL_VEC_FREE(&b->programs);
    fl_ir_run_fini(&b->run);
    free_strvec(b->source_paths.data, b->source_paths.len);
    free(b->role);
    for (size_t i = 0; i < b->readers.len; i++) fl_ir_reader_desc_free(b->readers.data[i]);
    FL_VEC_FREE(&b->readers);
    fl_ir_inference_free(b->inference);
    free(b->load);
    free(b);
}

void fl_ir_inference_free(FlInferenceSpec *s) {
    if (!s) return;
    free_strvec(s->feeds.data, s->feeds.len);
    free_strvec(s->targets.data, s->targets.len);
    free(s);
}

void fl_ir_reader_desc_free(FlReaderDesc *r) {
    if (!r) return;
    free(r->kind);
    FL_VEC_FREE(&r->inputs);
    free(r->dataset);
    free(r->part);
    free_strvec(r->words.data, r->words.len);
    FL_VEC_FREE(&r->word_ids);
    free(r->lang);
    free_strvec(r->files.data, r->files.len);
    free_strvec(r->slot_names.data, r->slot_names.len);
    free_strvec(r->slot_types.data, r->slot_types.len);
    FL_VEC_FREE(&r->slot_widths);
    FL_VEC_FREE(&r->slot_keys);
    free(r->line_format);
    FL_VEC_FREE(&r->shape_concat);
    FL_VEC_FREE(&r->ranks);
    FL_VEC_FREE(&r->lod_levels);
    free(r);
}

static FlReaderDesc *reader_desc_clone(const FlReaderDesc *r) {
    FlReaderDesc *c = fl_xcalloc(1, sizeof *c);
    *c = *r;
    c->kind = dup_or_null(r->kind);
    c->dataset = dup_or_null(r->dataset);
    c->part = dup_or_null(r->part);
    c->lang = dup_or_null(r->lang);
    c->inputs.data = NULL;
    c->inputs.len = c->inputs.cap = 0;
    for (size_t i = 0; i < r->inputs.len; i++) FL_VEC_PUSH(&c->inputs, r->inputs.data[i]);
    c->words.data = NULL;
    c->words.len = c->words.cap = 0;
    STRVEC_COPY(&c->words, &r->words);
    c->word_ids.data = NULL;
    c->word_ids.len = c->word_ids.cap = 0;
    for (size_t i = 0; i < r->word_ids.len; i++) FL_VEC_PUSH(&c->word_ids, r->word_ids.data[i]);
    c->files.data = c->slot_names.data = c->slot_types.data = NULL;
    c->files.len = c->files.cap = c->slot_names.len = c->slot_names.cap = c->slot_types.len = c->slot_types.cap = 0;
    STRVEC_COPY(&c->files, &r->files);
    STRVEC_COPY(&c->slot_names, &r->slot_names);
    STRVEC_COPY(&c->slot_types, &r->slot_types);
    c->slot_widths.data = NULL;
    c->slot_widths.len = c->slot_widths.cap = 0;
    for (size_t i = 0; i < r->slot_widths.len; i++) FL_VEC_PUSH(&c->slot_widths, r->slot_widths.data[i]);
    c->slot_keys.data = NULL;
    c->slot_keys.len = c->slot_keys.cap = 0;
    for (size_t i = 0; i < r->slot_keys.len; i++) FL_VEC_PUSH(&c->slot_keys, r->slot_keys.data[i]);
    c->line_format = dup_or_null(r->line_format);
    INTVEC_COPY(&c->shape_concat, &r->shape_concat);
    INTVEC_COPY(&c->ranks, &r->ranks);
    INTVEC_COPY(&c->lod_levels, &r->lod_levels);
    return c;
}

const FlProgram *fl_ir_bundle_program(const FlBundle *b, const char *name) {
    if (strcmp(name, "startup") == 0) return b->startup;
    if (strcmp(name, "main") == 0) return b->main;
    for (size_t i = 0; i < b->programs.len; i++)
        if (strcmp(b->programs.data[i].name, name) == 0) return b->programs.data[i].program;
    return NULL;
}

void fl_ir_bundle_add_program(FlBundle *b, const char *name, FlProgram *p) {
    FL_VEC_PUSH(&b->programs, ((FlNamedProgram){fl_xstrdup(name), p}));
}

FlBundle *fl_ir_bundle_clone(const FlBundle *b) {
    FlBundle *c = fl_xcalloc(1, sizeof *c);
    c->startup = b->startup ? fl_ir_program_clone(b->startup) : NULL;
    c->main = b->main ? fl_ir_program_clone(b->main) : NULL;
    c->driver = b->driver ? fl_ir_program_clone(b->driver) : NULL;
    for (size_t i = 0; i < b->programs.len; i++)
        fl_ir_bundle_add_program(c, b->programs.data[i].name, fl_ir_program_clone(b->programs.data[i].program));
    c->run.present = b->run.present;
    c->run.reader = fl_ir_reader_clone(b->run.reader);
    c->run.test_reader = fl_ir_reader_clone(b->run.test_reader);
    c->run.batch_size = b->run.batch_size;
    c->run.epochs = b->run.epochs;
    c->run.seed = b->run.seed;
    STRVEC_COPY(&c->run.fetch_names, &b->run.fetch_names);
    STRVEC_COPY(&c->run.fetch_vars, &b->run.fetch_vars);
    c->run.profile.present = b->run.profile.present;
    c->run.profile.state = dup_or_null(b->run.profile.state);
    c->run.profile.sorted_key = dup_or_null(b->run.profile.sorted_key);
    c->run.profile.path = dup_or_null(b->run.profile.path);
    STRVEC_COPY(&c->source_paths, &b->source_paths);
    c->role = dup_or_null(b->role);
    c->role_index = b->role_index;
    c->load = dup_or_null(b->load);
    for (size_t i = 0; i < b->readers.len; i++) FL_VEC_PUSH(&c->readers, reader_desc_clone(b->readers.data[i]));
    if (b->inference) {
        c->inference = fl_xcalloc(1, sizeof *c->inference);
        STRVEC_COPY(&c->inference->feeds, &b->inference->feeds);
        STRVEC_COPY(&c->inference->targets, &b->inference->targets);
    }
    return c;
}

FlPlan *fl_ir_plan_new(void) {
    FlPlan *p = fl_xcalloc(1, sizeof *p);
    p->mode = fl_xstrdup("sync");
    return p;
}

void fl_ir_plan_free(FlPlan *p) {
    if (!p) return;
    free(p->mode);
    for (size_t i = 0; i < p->roles.len; i++) fl_ir_bundle_free(p->roles.data[i]);
    FL_VEC_FREE(&p->roles);
    FL_VEC_FREE(&p->rank_role);
    free(p);
}

/* ---- validation ----
 * Messages say where (program, block, var or op) and what is wrong; callers prefix the file. */

static bool empty(const char *s) {
    return !s || !*s;
}

/* A location's checks; the error names block b's op or var (what) and its name. */
static FlStatus check_loc(FlLoc l, size_t nsources, FlErr *e, const FlBlock *b, const char *what,
                          const char *name) {
    if (l.file < -1 || (l.file >= 0 && (size_t)l.file >= nsources))
        return fl_err(e, "block %d, %s '%.100s': location names source file %d, but there are %zu",
                      b->idx, what, name, (int)l.file, nsources);
    if (l.line < 0 || l.col < 0 || l.len < 0)
        return fl_err(e, "block %d, %s '%.100s': negative location %d:%d (length %d)", b->idx, what,
                      name, (int)l.line, (int)l.col, (int)l.len);
    return FL_OK;
}

static FlStatus check_block_ref(int64_t ref, const FlProgram *p, const FlBlock *b,
                                const FlOpDesc *op, const FlAttr *a, FlErr *e) {
    if (ref <= 0 || (uint64_t)ref >= p->blocks.len)
        return fl_err(e, "block %d, op '%s': attribute '%s' names block %lld, which does not exist "
                      "(sub-blocks are 1..%zu)", b->idx, op->type, a->name, (long long)ref,
                      p->blocks.len - 1);
    if (ref <= b->idx)
        return fl_err(e, "block %d, op '%s': attribute '%s' names block %lld, which does not come "
                      "after the op's own block", b->idx, op->type, a->name, (long long)ref);
    return FL_OK;
}

static FlStatus check_slots(const FlSlot *s, size_t n, const FlBlock *b, const FlOpDesc *op,
                            bool input, FlErr *e) {
    const char *dir = input ? "input" : "output";
    for (size_t i = 0; i < n; i++) {
        if (empty(s[i].name))
            return fl_err(e, "block %d, op '%s': %s slot %zu has no name", b->idx, op->type, dir,
                          i);
        if (s[i].nargs && !s[i].args)
            return fl_err(e, "block %d, op '%s': %s slot '%s' has no args array", b->idx, op->type,
                          dir, s[i].name);
        for (size_t j = 0; j < s[i].nargs; j++) {
            if (empty(s[i].args[j]))
                return fl_err(e, "block %d, op '%s': %s slot '%s' has an empty var name", b->idx,
                              op->type, dir, s[i].name);
            /* the empty marker (rules.h) only says that nobody wants an output position */
            if (input && fl_rule_is_empty(s[i].args[j]))
                return fl_err(e, "block %d, op '%s': input slot '%s' position %zu holds the empty "
                              "marker '%s': an input must name a var", b->idx, op->type,
                              s[i].name, j, FL_RULE_EMPTY);
        }
    }
    return FL_OK;
}

static FlStatus check_op(const FlProgram *p, const FlBlock *b, const FlOpDesc *op,
                         size_t nsources, FlErr *e) {
    if (empty(op->type)) return fl_err(e, "block %d: an op has no type", b->idx);
    if (check_slots(op->ins.data, op->ins.len, b, op, true, e)) return FL_ERROR;
    if (check_slots(op->outs.data, op->outs.len, b, op, false, e)) return FL_ERROR;
    for (size_t i = 0; i < op->attrs.len; i++) {
        const FlAttr *a = &op->attrs.data[i];
        if (empty(a->name))
            return fl_err(e, "block %d, op '%s': attribute %zu has no name", b->idx, op->type, i);
        if ((int)a->type < 0 || a->type >= FL_ATTR_TYPE_COUNT)
            return fl_err(e, "block %d, op '%s': attribute '%s' has an unknown type %d", b->idx,
                          op->type, a->name, (int)a->type);
        switch (a->type) {
        case FL_ATTR_INT:
        case FL_ATTR_FLOAT: break;
        case FL_ATTR_STRING:
            if (!a->s)
                return fl_err(e, "block %d, op '%s': string attribute '%s' has no value", b->idx,
                              op->type, a->name);
            break;
        case FL_ATTR_BOOL:
            if (a->i != 0 && a->i != 1)
                return fl_err(e, "block %d, op '%s': bool attribute '%s' is %lld, not 0 or 1",
                              b->idx, op->type, a->name, (long long)a->i);
            break;
        case FL_ATTR_INTS:
        case FL_ATTR_BLOCKS:
            if (a->n && !a->ints)
                return fl_err(e, "block %d, op '%s': attribute '%s' has no values", b->idx,
                              op->type, a->name);
            if (a->type == FL_ATTR_BLOCKS)
                for (size_t j = 0; j < a->n; j++)
                    if (check_block_ref(a->ints[j], p, b, op, a, e)) return FL_ERROR;
            break;
        case FL_ATTR_FLOATS:
            if (a->n && !a->floats)
                return fl_err(e, "block %d, op '%s': attribute '%s' has no values", b->idx,
                              op->type, a->name);
            break;
        case FL_ATTR_STRINGS:
            if (a->n && !a->strs)
                return fl_err(e, "block %d, op '%s': attribute '%s' has no values", b->idx,
                              op->type, a->name);
            for (size_t j = 0; j < a->n; j++)
                if (!a->strs[j])
                    return fl_err(e, "block %d, op '%s': attribute '%s' has a missing string",
                                  b->idx, op->type, a->name);
            break;
        case FL_ATTR_BLOCK:
            if (check_block_ref(a->i, p, b, op, a, e)) return FL_ERROR;
            break;
        case FL_ATTR_TYPE_COUNT: break;
        }
    }
    return check_loc(op->loc, nsources, e, b, "op", op->type);
}

static FlStatus check_var(const FlBlock *b, const FlVarDesc *v, size_t nsources, FlErr *e) {
    if (empty(v->name)) return fl_err(e, "block %d: a var has no name", b->idx);
    if (fl_rule_is_empty(v->name))
        return fl_err(e, "block %d: a var is named '%s', the marker of an empty argument", b->idx,
                      FL_RULE_EMPTY);
    if ((int)v->kind < 0 || v->kind >= FL_VAR_KIND_COUNT)
        return fl_err(e, "block %d, var '%s': unknown var kind %d", b->idx, v->name, (int)v->kind);
    if ((int)v->dtype < 0 || v->dtype >= FL_DT_COUNT)
        return fl_err(e, "block %d, var '%s': unknown dtype %d", b->idx, v->name, (int)v->dtype);
    if (v->ndim < 0 || v->ndim > FL_IR_MAX_DIMS)
        return fl_err(e, "block %d, var '%s': rank %d is not in 0..%d", b->idx, v->name, v->ndim,
                      FL_IR_MAX_DIMS);
    for (int i = 0; i < v->ndim; i++)
        if (v->shape[i] < -1)
            return fl_err(e, "block %d, var '%s': dimension %d is %lld (must be >= -1)", b->idx,
                          v->name, i, (long long)v->shape[i]);
    if (v->capacity < 0)
        return fl_err(e, "block %d, var '%s': negative channel capacity %lld", b->idx, v->name,
                      (long long)v->capacity);
    if (v->elem_chans < 0 || v->elem_chans > FL_IR_MAX_DIMS || (v->elem_chans && v->kind != FL_VAR_CHANNEL))
        return fl_err(e, "block %d, var '%s': elem_chans %d (0..%d, channels only)", b->idx, v->name,
                      (int)v->elem_chans, FL_IR_MAX_DIMS);
    return check_loc(v->loc, nsources, e, b, "var", v->name);
}

/* A LoD tensor's offset vars: each a dense int64 vector the block can see; a tensor array's: each
 * an int64 array of such vectors (one per element). */
static FlStatus check_lod(const FlProgram *p, const FlBlock *b, const FlVarDesc *v, FlErr *e) {
    if (v->lod_level < 0 || v->lod_level > FL_IR_MAX_LOD)
        return fl_err(e, "block %d, var '%s': lod_level %d (0..%d)", b->idx, v->name, v->lod_level, FL_IR_MAX_LOD);
    bool array = v->kind == FL_VAR_TENSOR_ARRAY;
    for (int i = 0; i < v->lod_level; i++) {
        if (empty(v->lod[i])) return fl_err(e, "block %d, var '%s': LoD level %d names no var", b->idx, v->name, i);
        const FlVarDesc *o = fl_ir_var_lookup(p, b, v->lod[i]);
        if (!o || o->kind != (array ? FL_VAR_TENSOR_ARRAY : FL_VAR_DENSE) || o->dtype != FL_DT_INT64 || o->ndim != 1)
            return fl_err(e, "block %d, var '%s': its LoD level %d, '%s', is %s (%s is needed)", b->idx, v->name, i,
                          v->lod[i], o ? (array ? "not an int64 array" : "not an int64 vector") : "not a var",
                          array ? "an int64 array of offset vectors" : "an int64 vector of offsets");
    }
    return FL_OK;
}

FlStatus fl_ir_validate_program(const FlProgram *p, size_t nsources, FlErr *e) {
    if (!p) return fl_err(e, "missing program");
    if (p->blocks.len == 0) return fl_err(e, "the program has no blocks (block 0 is required)");
    if (p->blocks.len > INT32_MAX) return fl_err(e, "too many blocks (%zu)", p->blocks.len);
    for (size_t i = 0; i < p->blocks.len; i++) {
        const FlBlock *b = p->blocks.data[i];
        if (!b) return fl_err(e, "block %zu is missing", i);
        if (b->idx < 0 || (size_t)b->idx != i)
            return fl_err(e, "block %zu says it is block %d", i, b->idx);
        if (i == 0 && b->parent != -1)
            return fl_err(e, "block 0 has parent %d (block 0 has none: -1)", b->parent);
        if (i > 0 && (b->parent < 0 || (size_t)b->parent >= i))
            return fl_err(e, "block %zu has parent %d, which is not an earlier block", i,
                          b->parent);
        if (b->var_index.len != b->vars.len)
            return fl_err(e, "block %zu: the var index is out of step with its vars", i);
        for (size_t j = 0; j < b->vars.len; j++)
            if (check_var(b, b->vars.data[j], nsources, e) || check_lod(p, b, b->vars.data[j], e)) return FL_ERROR;
        for (size_t j = 0; j < b->ops.len; j++)
            if (check_op(p, b, b->ops.data[j], nsources, e)) return FL_ERROR;
    }
    return FL_OK;
}

static FlStatus check_names(char *const *names, size_t n, const char *what, FlErr *e) {
    for (size_t i = 0; i < n; i++)
        if (empty(names[i])) return fl_err(e, "%s %zu is empty", what, i);
    return FL_OK;
}

static FlStatus check_reader(const FlReaderSpec *r, const char *which, FlErr *e) {
    if (empty(r->path)) return fl_err(e, "%s: no data file path", which);
    if (!r->base_dir) return fl_err(e, "%s: no base directory", which);
    if (r->skip_rows < 0)
        return fl_err(e, "%s: negative skip_rows %lld", which, (long long)r->skip_rows);
    for (size_t i = 0; i < r->feeds.len; i++) {
        const FlFeedCols *f = &r->feeds.data[i];
        if (empty(f->feed)) return fl_err(e, "%s: feed %zu has no name", which, i);
        if ((int)f->dtype < 0 || f->dtype >= FL_DT_COUNT)
            return fl_err(e, "%s: feed '%s' has an unknown dtype %d", which, f->feed,
                          (int)f->dtype);
        if (f->ncols && !f->cols) return fl_err(e, "%s: feed '%s' has no columns", which, f->feed);
        if (f->lod_level < 0 || (f->lod_level > 0 && f->ncols != 1))
            return fl_err(e, "%s: feed '%s' has lod_level %d and %zu columns (a sequence reads one)",
                          which, f->feed, f->lod_level, f->ncols);
        for (size_t j = 0; j < f->ncols; j++)
            if (f->cols[j] < 0)
                return fl_err(e, "%s: feed '%s' has a negative column %lld", which, f->feed,
                              (long long)f->cols[j]);
    }
    char what[96];
    snprintf(what, sizeof what, "%s: normalized feed", which);
    if (check_names(r->normalize.data, r->normalize.len, what, e)) return FL_ERROR;
    snprintf(what, sizeof what, "%s: scaled feed", which);
    if (check_names(r->scale_feeds.data, r->scale_feeds.len, what, e)) return FL_ERROR;
    if (r->scale_feeds.len != r->scale_factors.len)
        return fl_err(e, "%s: %zu scaled feeds but %zu scale factors", which, r->scale_feeds.len,
                      r->scale_factors.len);
    if (r->has_split && !(r->split_fraction >= 0 && r->split_fraction <= 1))
        return fl_err(e, "%s: split fraction %g is not in [0, 1]", which, r->split_fraction);
    if ((int)r->part < FL_PART_ALL || (int)r->part > FL_PART_TEST)
        return fl_err(e, "%s: unknown reader part %d", which, (int)r->part);
    return FL_OK;
}

/* A recordio reader (open_files): files, and per slot a dtype of the project, a width, a shape
 * whose dims after the first make the width and a LoD level of 0 or 1. */
static FlStatus check_recordio(const FlReaderDesc *r, size_t i, FlErr *e) {
    size_t n = r->slot_names.len, at = 0;
    if (!r->files.len || !n || r->slot_types.len != n || r->slot_widths.len != n || r->ranks.len != n ||
        r->lod_levels.len != n || r->slot_keys.len || r->line_format || r->gzip || r->pass_num < 1)
        return fl_err(e, "reader %zu (recordio): %zu files, %zu slot names, %zu types, %zu widths, %zu ranks, %zu LoD "
                      "levels, %lld passes", i, r->files.len, n, r->slot_types.len, r->slot_widths.len, r->ranks.len,
                      r->lod_levels.len, (long long)r->pass_num);
    for (size_t j = 0; j < n; j++) {
        FlDType dt;
        int64_t rank = r->ranks.data[j], w = 1;
        if (!fl_dtype_from_name(r->slot_types.data[j], &dt) || rank < 1 || rank > FL_IR_MAX_DIMS ||
            (size_t)rank > r->shape_concat.len - at || r->lod_levels.data[j] < 0 || r->lod_levels.data[j] > 1)
            return fl_err(e, "reader %zu (recordio): slot '%s' of type '%s', rank %lld, LoD level %lld", i,
                          r->slot_names.data[j], r->slot_types.data[j], (long long)rank,
                          (long long)r->lod_levels.data[j]);
        for (int64_t k = 1; k < rank; k++) {
            int64_t d = r->shape_concat.data[at + (size_t)k];
            if (d < 1 || w > INT64_MAX / d)
                return fl_err(e, "reader %zu (recordio): slot '%s': dim %lld is %lld", i, r->slot_names.data[j],
                              (long long)k, (long long)d);
            w *= d;
        }
        if (w != r->slot_widths.data[j])
            return fl_err(e, "reader %zu (recordio): slot '%s' of width %lld, its shape's %lld", i,
                          r->slot_names.data[j], (long long)r->slot_widths.data[j], (long long)w);
        at += (size_t)rank;
    }
    if (at != r->shape_concat.len) return fl_err(e, "reader %zu (recordio): %zu dims left over", i, r->shape_concat.len - at);
    return FL_OK;
}

/* Reader i of Bundle.readers: a known kind with its number of inputs, each an earlier reader, and
 * its arguments in range (the runtime relies on it). */
static FlStatus check_reader_desc(const FlReaderDesc *r, size_t i, FlErr *e) {
    static const struct {
        const char *kind;
        size_t min_in, max_in;
        int64_t min_n; /* -1: n unused */
    } kinds[] = {{"dataset", 0, 0, -1}, {"shuffle", 1, 1, 1}, {"batch", 1, 1, 1}, {"firstn", 1, 1, 0},
                 {"chain", 1, SIZE_MAX, -1}, {"compose", 1, SIZE_MAX, -1}, {"buffered", 1, 1, 1},
                 {"shuffle_batches", 1, 1, 1}, {"concat_batches", 1, 1, 1},
                 {"multislot", 0, 0, -1}, {"ctr", 0, 0, 1}, {"recordio", 0, 0, 1}};
    size_t k = 0;
    while (k < FL_ARRAY_LEN(kinds) && (!r->kind || strcmp(r->kind, kinds[k].kind) != 0)) k++;
    if (k == FL_ARRAY_LEN(kinds)) return fl_err(e, "reader %zu: unknown kind '%s'", i, r->kind ? r->kind : "");
    if (r->inputs.len < kinds[k].min_in || r->inputs.len > kinds[k].max_in)
        return fl_err(e, "reader %zu (%s): %zu inputs", i, r->kind, r->inputs.len);
    for (size_t j = 0; j < r->inputs.len; j++)
        if (r->inputs.data[j] < 0 || (size_t)r->inputs.data[j] >= i)
            return fl_err(e, "reader %zu (%s): input %d is not an earlier reader", i, r->kind, (int)r->inputs.data[j]);
    if (kinds[k].min_n >= 0 && r->n < kinds[k].min_n)
        return fl_err(e, "reader %zu (%s): size %lld below %lld", i, r->kind, (long long)r->n,
                      (long long)kinds[k].min_n);
    if (k == 0 && (empty(r->dataset) || empty(r->part)))
        return fl_err(e, "reader %zu: a dataset reader without its module or part", i);
    if (r->words.len != r->word_ids.len)
        return fl_err(e, "reader %zu (%s): %zu words but %zu word ids", i, r->kind, r->words.len, r->word_ids.len);
    if (k != 0 && r->words.len) return fl_err(e, "reader %zu (%s): a word dict on a decorator", i, r->kind);
    if (r->data_type < 0 || r->data_type > 2 || (k != 0 && r->data_type))
        return fl_err(e, "reader %zu (%s): data_type %lld", i, r->kind, (long long)r->data_type);
    if (k != 0 && (r->n2 || r->lang)) return fl_err(e, "reader %zu (%s): a dataset's arguments on a decorator", i, r->kind);
    bool ctr = strcmp(r->kind, "ctr") == 0, rio = strcmp(r->kind, "recordio") == 0,
         ms = ctr || rio || strcmp(r->kind, "multislot") == 0;
    if (rio) return check_recordio(r, i, e);
    if (r->shape_concat.len || r->ranks.len || r->lod_levels.len || r->pass_num)
        return fl_err(e, "reader %zu (%s): open_files' shapes, LoD levels or passes on another kind of reader", i,
                      r->kind);
    if (!ms && (r->files.len || r->slot_names.len || r->slot_types.len || r->slot_widths.len))
        return fl_err(e, "reader %zu (%s): MultiSlot files or slots on another kind of reader", i, r->kind);
    if (!ctr && (r->slot_keys.len || r->line_format || r->gzip))
        return fl_err(e, "reader %zu (%s): ctr_reader's slot keys or line format on another kind of reader", i,
                      r->kind);
    if (ms && (!r->slot_names.len || r->slot_types.len != r->slot_names.len ||
               r->slot_widths.len != r->slot_names.len || (ctr && r->slot_keys.len != r->slot_names.len)))
        return fl_err(e, "reader %zu (%s): %zu slot names, %zu types, %zu widths, %zu keys", i, r->kind,
                      r->slot_names.len, r->slot_types.len, r->slot_widths.len, r->slot_keys.len);
    for (size_t j = 0; ms && j < r->slot_names.len; j++)
        if ((strcmp(r->slot_types.data[j], "uint64") != 0 && strcmp(r->slot_types.data[j], "float") != 0) ||
            r->slot_widths.data[j] < (ctr ? 0 : -1))
            return fl_err(e, "reader %zu (%s): slot '%s' of type '%s' and width %lld", i, r->kind,
                          r->slot_names.data[j], r->slot_types.data[j], (long long)r->slot_widths.data[j]);
    if (ctr && (!r->line_format || (strcmp(r->line_format, "svm") != 0 && strcmp(r->line_format, "csv") != 0)))
        return fl_err(e, "reader %zu (ctr): line format '%s' (\"svm\" or \"csv\")", i,
                      r->line_format ? r->line_format : "");
    if (ctr && !r->files.len) return fl_err(e, "reader %zu (ctr): no files", i);
    return FL_OK;
}

/* An inference model: targets, and feeds and targets that are vars of main's global block. */
static FlStatus check_inference(const FlBundle *b, FlErr *e) {
    const FlInferenceSpec *s = b->inference;
    if (!s) return FL_OK;
    if (!s->targets.len) return fl_err(e, "inference model: no targets");
    const FlBlock *g = fl_ir_block(b->main, 0);
    for (size_t k = 0; k < 2; k++) {
        char *const *v = k ? s->targets.data : s->feeds.data;
        size_t n = k ? s->targets.len : s->feeds.len;
        if (check_names(v, n, k ? "inference model: target" : "inference model: feed", e)) return FL_ERROR;
        for (size_t i = 0; i < n; i++)
            if (!fl_ir_var_find(g, v[i]))
                return fl_err(e, "inference model: %s '%.100s' is not a var of the main program's global block",
                              k ? "target" : "feed", v[i]);
    }
    return FL_OK;
}

FlStatus fl_ir_validate_bundle(const FlBundle *b, FlErr *e) {
    FlErr sub;
    if (!b) return fl_err(e, "missing bundle");
    if (check_names(b->source_paths.data, b->source_paths.len, "source path", e)) return FL_ERROR;
    if (!b->startup) return fl_err(e, "the bundle has no startup program");
    if (!b->main) return fl_err(e, "the bundle has no main program");
    if (fl_ir_validate_program(b->startup, b->source_paths.len, &sub))
        return fl_err(e, "startup program: %s", sub.msg);
    if (fl_ir_validate_program(b->main, b->source_paths.len, &sub))
        return fl_err(e, "main program: %s", sub.msg);
    if (b->driver && fl_ir_validate_program(b->driver, b->source_paths.len, &sub))
        return fl_err(e, "driver program: %s", sub.msg);
    for (size_t i = 0; i < b->programs.len; i++) {
        const FlNamedProgram *np = &b->programs.data[i];
        if (empty(np->name)) return fl_err(e, "named program %zu has no name", i);
        if (!strcmp(np->name, "startup") || !strcmp(np->name, "main") || !strcmp(np->name, "driver"))
            return fl_err(e, "a named program is called '%s', the name of one of the bundle's own", np->name);
        for (size_t k = 0; k < i; k++)
            if (!strcmp(b->programs.data[k].name, np->name))
                return fl_err(e, "two named programs are called '%s'", np->name);
        if (!np->program) return fl_err(e, "named program '%s' has no program", np->name);
        if (fl_ir_validate_program(np->program, b->source_paths.len, &sub))
            return fl_err(e, "program '%s': %s", np->name, sub.msg);
    }
    if (empty(b->role)) return fl_err(e, "the bundle has no role");
    if (b->role_index < 0)
        return fl_err(e, "negative role index %lld", (long long)b->role_index);
    const FlRunSpec *r = &b->run;
    if (r->reader && check_reader(r->reader, "run spec reader", e)) return FL_ERROR;
    if (r->test_reader && check_reader(r->test_reader, "run spec test reader", e)) return FL_ERROR;
    if (r->batch_size < 0)
        return fl_err(e, "run spec: negative batch size %lld", (long long)r->batch_size);
    if (r->epochs < 0) return fl_err(e, "run spec: negative epochs %lld", (long long)r->epochs);
    if (r->fetch_names.len != r->fetch_vars.len)
        return fl_err(e, "run spec: %zu fetch names but %zu fetch vars", r->fetch_names.len,
                      r->fetch_vars.len);
    if (check_names(r->fetch_names.data, r->fetch_names.len, "run spec: fetch name", e))
        return FL_ERROR;
    if (check_names(r->fetch_vars.data, r->fetch_vars.len, "run spec: fetch var", e))
        return FL_ERROR;
    const FlProfileSpec *pf = &r->profile;
    if (pf->present && !r->present) return fl_err(e, "run spec: a profile but no training to profile");
    if (pf->present && (!pf->state || strcmp(pf->state, "CPU") != 0))
        return fl_err(e, "run spec: profiler state '%s' (this runtime times 'CPU' only)", pf->state ? pf->state : "");
    if (pf->present && fl_ir_profile_sort_key(pf->sorted_key) < 0)
        return fl_err(e, "run spec: unknown profiler sorted_key '%s'", pf->sorted_key);
    if (pf->present && pf->path && !*pf->path) return fl_err(e, "run spec: an empty profile path");
    for (size_t i = 0; i < b->readers.len; i++)
        if (check_reader_desc(b->readers.data[i], i, e)) return FL_ERROR;
    if (b->load && (!b->load[0] || !b->role || strcmp(b->role, "pserver") != 0))
        return fl_err(e, "a bundle loads checkpoint '%s' after its startup program, but only a pserver role does",
                      b->load);
    return check_inference(b, e);
}

FlStatus fl_ir_validate_plan(const FlPlan *p, FlErr *e) {
    FlErr sub;
    if (!p) return fl_err(e, "missing plan");
    if (empty(p->mode)) return fl_err(e, "the plan has no mode");
    if (p->pservers < 0) return fl_err(e, "negative pserver count %lld", (long long)p->pservers);
    if (p->trainers < 1)
        return fl_err(e, "the plan has %lld trainers (at least 1 is needed)",
                      (long long)p->trainers);
    if (p->roles.len == 0) return fl_err(e, "the plan has no roles");
    if ((uint64_t)p->pservers + (uint64_t)p->trainers != p->roles.len)
        return fl_err(e, "the plan has %zu roles for %lld trainers and %lld pservers",
                      p->roles.len, (long long)p->trainers, (long long)p->pservers);
    for (size_t i = 0; i < p->roles.len; i++)
        if (fl_ir_validate_bundle(p->roles.data[i], &sub))
            return fl_err(e, "role %zu: %s", i, sub.msg);
    bool allreduce = !strcmp(p->mode, "allreduce");
    if (strcmp(p->mode, "sync") && strcmp(p->mode, "async") && !allreduce)
        return fl_err(e, "the plan's mode is '%.40s'; expected sync, async or allreduce", p->mode);
    if (allreduce && p->pservers != 0)
        return fl_err(e, "the plan's mode is allreduce but it has %lld pservers (allreduce has none)",
                      (long long)p->pservers);
    /* roles: trainers 0..T-1, then pservers 0..P-1 */
    for (size_t i = 0; i < p->roles.len; i++) {
        const FlBundle *b = p->roles.data[i];
        bool trainer = i < (size_t)p->trainers;
        int64_t want = trainer ? (int64_t)i : (int64_t)i - p->trainers;
        if (empty(b->role) || strcmp(b->role, trainer ? "trainer" : "pserver") || b->role_index != want)
            return fl_err(e, "role %zu is %s %lld; expected %s %lld (trainers first, then pservers)", i,
                          empty(b->role) ? "(none)" : b->role, (long long)b->role_index,
                          trainer ? "trainer" : "pserver", (long long)want);
    }
    /* the rank map: one rank per role, each kind numbered in rank order */
    if (p->rank_role.len == 0) return fl_err(e, "the plan has an empty rank map");
    if (p->rank_role.len != p->roles.len)
        return fl_err(e, "the plan's rank map has %zu ranks for %zu roles (%lld trainers + %lld pservers): one "
                      "rank per role", p->rank_role.len, p->roles.len, (long long)p->trainers,
                      (long long)p->pservers);
    int64_t next[2] = {0, p->trainers}; /* the role the next trainer / pserver rank must map to */
    for (size_t i = 0; i < p->rank_role.len; i++) {
        int64_t k = p->rank_role.data[i];
        if (k < 0 || (uint64_t)k >= p->roles.len)
            return fl_err(e, "rank %zu maps to role %lld, but the plan has roles 0..%zu", i, (long long)k,
                          p->roles.len - 1);
        int kind = k >= p->trainers;
        if (k != next[kind])
            return fl_err(e, "rank %zu maps to role %lld (%s %lld); expected %s %lld: the rank map numbers each "
                          "kind in rank order, each role once", i, (long long)k, kind ? "pserver" : "trainer",
                          (long long)p->roles.data[k]->role_index, kind ? "pserver" : "trainer",
                          (long long)(kind ? next[1] - p->trainers : next[0]));
        next[kind]++;
    }
    return FL_OK;
}
