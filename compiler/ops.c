/* ops.c: the op table of compiler/ops.def as data.
 *
 * On first use (pthread_once) every FL_OP line's spec strings are parsed into an FlOpInfo, and
 * the gradient ops are derived: for an FL_GRAD_DEFAULT op <id>, <id>_grad takes every forward
 * input, every forward output and "<Out>@GRAD" for each output, and makes "<X>@GRAD" for each
 * input (all optional); an FL_GRAD_CUSTOM op's gradient slots come from its FL_GRAD_SLOTS line.
 * A gradient op has its forward op's attributes. Forward op i sits at table[i] (i == its
 * FlOpId); gradient ops follow in the order of their forward ops. Names map to entries through
 * one FlMap.
 *
 * Invariant: after init the table, the strings and the map are never written again, so any
 * thread may read them. Everything lives in one static arena for the life of the process.
 */
#include "compiler/ops.h"

#include <assert.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct Spec {
    const char *name, *ins, *outs, *attrs;
    FlGradKind grad;
    unsigned flags;
    const char *desc;
} Spec;

static const Spec specs[] = {
#define FL_OP(id, ins, outs, attrs, grad, flags, desc) {#id, ins, outs, attrs, grad, flags, desc},
#include "compiler/ops.def"
#undef FL_OP
};
static_assert(FL_ARRAY_LEN(specs) == FL_OPID_COUNT, "one spec per op");


/* ops.def in its order: an op (title NULL) or the FL_GROUP title of the ops that follow. */
static const char *const sections[] = {
#define FL_OP(id, ins, outs, attrs, grad, flags, desc) NULL,
#define FL_GROUP(title) title,
#include "compiler/ops.def"
#undef FL_GROUP
#undef FL_OP
};

/* The gradient slots of the FL_GRAD_CUSTOM ops (FL_GRAD_SLOTS lines), by forward op. */
typedef struct CustomGrad {
    const char *ins, *outs;
} CustomGrad;
static const CustomGrad custom_grads[FL_OPID_COUNT] = {
#define FL_OP(id, ins, outs, attrs, grad, flags, desc)
#define FL_GRAD_SLOTS(id, ins, outs) [FL_OPID_##id] = {ins, outs},
#include "compiler/ops.def"
#undef FL_GRAD_SLOTS
#undef FL_OP
};

/* Every FL_GRAD_CUSTOM op has an FL_GRAD_SLOTS line and only those have one, and every op has a
 * description (a string literal: "" is caught by the table's build). */
#define FL_OP(id, ins, outs, attrs, grad, flags, desc) +((grad == FL_GRAD_CUSTOM) ? 1 : 0)
enum { NCUSTOM = 0
#include "compiler/ops.def"
};
#undef FL_OP
#define FL_OP(id, ins, outs, attrs, grad, flags, desc)
#define FL_GRAD_SLOTS(id, ins, outs) +1
enum { NCUSTOM_SLOTS = 0
#include "compiler/ops.def"
};
#undef FL_GRAD_SLOTS
#undef FL_OP
static_assert((int)NCUSTOM == (int)NCUSTOM_SLOTS, "every FL_GRAD_CUSTOM op needs its FL_GRAD_SLOTS line");

const char *fl_ops_describe(FlOpId id) {
    FL_ASSERT((unsigned)id < FL_OPID_COUNT);
    return specs[id].desc;
}

static pthread_once_t once = PTHREAD_ONCE_INIT;
static FlArena arena;
static FlOpInfo table[2 * FL_OPID_COUNT];
static size_t ntable;
static FlMap by_name;

/* The next space-separated word of *s (its length in *len), advancing *s past it; NULL at the
 * end. */
static const char *next_word(const char **s, size_t *len) {
    while (**s == ' ') (*s)++;
    if (!**s) return NULL;
    const char *start = *s;
    while (**s && **s != ' ') (*s)++;
    *len = (size_t)(*s - start);
    return start;
}

static int parse_slots(const char *spec, FlSlotInfo *out) {
    int n = 0;
    size_t len;
    for (const char *start; (start = next_word(&spec, &len));) {
        FL_ASSERT(n < FL_OPS_MAX_SLOTS);
        FlSlotInfo *si = &out[n++];
        memset(si, 0, sizeof *si);
        if (start[len - 1] == '?') si->optional = true, len--; /* "X?", "X@GRAD*?": may be absent */
        if (len && start[len - 1] == '*') si->list = true, len--;
        FL_ASSERT(len > 0);
        si->name = fl_arena_strndup(&arena, start, len);
    }
    return n;
}

static FlAttrType attr_type_of(const char *t, size_t n) {
    static const struct {
        const char *code;
        FlAttrType type;
    } codes[] = {{"i", FL_ATTR_INT},     {"f", FL_ATTR_FLOAT},   {"s", FL_ATTR_STRING},
                 {"b", FL_ATTR_BOOL},    {"I", FL_ATTR_INTS},    {"F", FL_ATTR_FLOATS},
                 {"S", FL_ATTR_STRINGS}, {"B", FL_ATTR_BLOCK},   {"Bs", FL_ATTR_BLOCKS}};
    for (size_t i = 0; i < FL_ARRAY_LEN(codes); i++)
        if (strlen(codes[i].code) == n && memcmp(codes[i].code, t, n) == 0) return codes[i].type;
    fl_panic(__FILE__, __LINE__, "ops.def: bad attribute type '%.*s'", (int)n, t);
}

/* Number of comma-separated items in v (0 for ""). */
static size_t count_items(const char *v) {
    if (!*v) return 0;
    size_t n = 1;
    for (const char *s = v; *s; s++) n += *s == ',';
    return n;
}

static void parse_default(FlAttr *a, const char *v) {
    char *end;
    switch (a->type) {
    case FL_ATTR_INT:
    case FL_ATTR_BLOCK:
        a->i = strtoll(v, &end, 10);
        FL_ASSERT(*end == 0 && end != v);
        break;
    case FL_ATTR_BOOL:
        FL_ASSERT(strcmp(v, "0") == 0 || strcmp(v, "1") == 0);
        a->i = v[0] == '1';
        break;
    case FL_ATTR_FLOAT:
        a->f = strtod(v, &end);
        FL_ASSERT(*end == 0 && end != v);
        break;
    case FL_ATTR_STRING: a->s = fl_arena_strdup(&arena, v); break;
    case FL_ATTR_INTS:
    case FL_ATTR_BLOCKS:
    case FL_ATTR_FLOATS:
    case FL_ATTR_STRINGS: {
        a->n = count_items(v);
        if (a->type == FL_ATTR_FLOATS)
            a->floats = fl_arena_alloc(&arena, (a->n + 1) * sizeof(double));
        else if (a->type == FL_ATTR_STRINGS)
            a->strs = fl_arena_alloc(&arena, (a->n + 1) * sizeof(char *));
        else
            a->ints = fl_arena_alloc(&arena, (a->n + 1) * sizeof(int64_t));
        const char *s = v;
        for (size_t k = 0; k < a->n; k++) {
            const char *comma = strchr(s, ',');
            size_t len = comma ? (size_t)(comma - s) : strlen(s);
            char *item = fl_arena_strndup(&arena, s, len);
            if (a->type == FL_ATTR_STRINGS) {
                a->strs[k] = item;
            } else if (a->type == FL_ATTR_FLOATS) {
                a->floats[k] = strtod(item, &end);
                FL_ASSERT(*end == 0 && end != item);
            } else {
                a->ints[k] = strtoll(item, &end, 10);
                FL_ASSERT(*end == 0 && end != item);
            }
            s += len + (comma != NULL);
        }
        break;
    }
    case FL_ATTR_TYPE_COUNT: FL_UNREACHABLE();
    }
}

static int parse_attrs(const char *spec, FlAttrInfo *out) {
    int n = 0;
    size_t len;
    for (const char *start; (start = next_word(&spec, &len));) {
        char *item = fl_arena_strndup(&arena, start, len);
        char *colon = strchr(item, ':');
        FL_ASSERT(colon && n < FL_OPS_MAX_ATTRS);
        *colon = 0;
        char *type = colon + 1, *eq = strchr(type, '=');
        size_t tlen = eq ? (size_t)(eq - type) : strlen(type);
        FlAttrInfo *ai = &out[n++];
        memset(ai, 0, sizeof *ai);
        ai->name = item;
        ai->optional = !eq && tlen > 1 && type[tlen - 1] == '?';
        ai->type = attr_type_of(type, tlen - ai->optional);
        ai->required = eq == NULL && !ai->optional;
        ai->dflt.name = item;
        ai->dflt.type = ai->type;
        if (eq) parse_default(&ai->dflt, eq + 1);
    }
    return n;
}

static void add_slot(FlSlotInfo *slots, int *n, const char *name, bool list, bool optional) {
    FL_ASSERT(*n < FL_OPS_MAX_SLOTS);
    slots[*n] = (FlSlotInfo){name, list, optional};
    (*n)++;
}

static const char *grad_name(const char *slot) {
    return fl_arena_printf(&arena, "%s@GRAD", slot);
}

/* Gives gs the list flag of the slot among fwd[0..n) named name[0..len), if there is one. */
static void inherit_list(FlSlotInfo *gs, const char *name, size_t len, const FlSlotInfo *fwd,
                         int n) {
    for (int j = 0; j < n; j++)
        if (strlen(fwd[j].name) == len && !memcmp(name, fwd[j].name, len)) gs->list = fwd[j].list;
}

static void derive_grad(const FlOpInfo *fwd) {
    FlOpInfo *g = &table[ntable++];
    memset(g, 0, sizeof *g);
    g->name = fl_arena_printf(&arena, "%s_grad", fwd->name);
    g->id = fwd->id;
    g->is_grad = true;
    g->grad = FL_GRAD_NONE;
    g->flags = fwd->flags & (FL_OPF_LONG | FL_OPF_STORAGE);
    memcpy(g->attrs, fwd->attrs, sizeof g->attrs);
    g->nattrs = fwd->nattrs;
    if (fwd->grad == FL_GRAD_DEFAULT) {
        for (int i = 0; i < fwd->nins; i++) g->ins[g->nins++] = fwd->ins[i];
        for (int i = 0; i < fwd->nouts; i++)
            add_slot(g->ins, &g->nins, fwd->outs[i].name, fwd->outs[i].list, true);
        for (int i = 0; i < fwd->nouts; i++)
            add_slot(g->ins, &g->nins, grad_name(fwd->outs[i].name), fwd->outs[i].list, true);
        for (int i = 0; i < fwd->nins; i++)
            add_slot(g->outs, &g->nouts, grad_name(fwd->ins[i].name), fwd->ins[i].list, true);
        return;
    }
    const CustomGrad *cg = &custom_grads[fwd->id];
    if (cg->ins) {
        g->nins = parse_slots(cg->ins, g->ins);
        g->nouts = parse_slots(cg->outs, g->outs);
        /* a slot keeps the list flag of the forward slot it comes from (an input's gradient:
         * "X@GRAD?" of a list X is a list, one gradient per var, optional as every output) */
        for (int i = 0; i < g->nins; i++) {
            const char *nm = g->ins[i].name;
            size_t len = strcspn(nm, "@");
            inherit_list(&g->ins[i], nm, len, fwd->ins, fwd->nins);
            inherit_list(&g->ins[i], nm, len, fwd->outs, fwd->nouts);
        }
        for (int i = 0; i < g->nouts; i++) /* "X@GRAD?" of a list slot X is a list too */
            inherit_list(&g->outs[i], g->outs[i].name, strcspn(g->outs[i].name, "@"), fwd->ins, fwd->nins);
        return;
    }
    fl_panic(__FILE__, __LINE__, "op '%s' is FL_GRAD_CUSTOM but has no custom gradient slots",
             fwd->name);
}

static void init(void) {
    fl_arena_init(&arena);
    fl_map_init(&by_name);
    for (size_t i = 0; i < FL_OPID_COUNT; i++) {
        FlOpInfo *o = &table[i];
        memset(o, 0, sizeof *o);
        o->name = specs[i].name;
        o->id = (FlOpId)i;
        o->grad = specs[i].grad;
        o->flags = specs[i].flags;
        o->nins = parse_slots(specs[i].ins, o->ins);
        o->nouts = parse_slots(specs[i].outs, o->outs);
        o->nattrs = parse_attrs(specs[i].attrs, o->attrs);
    }
    ntable = FL_OPID_COUNT;
    for (size_t i = 0; i < FL_OPID_COUNT; i++)
        if (table[i].grad == FL_GRAD_DEFAULT || table[i].grad == FL_GRAD_CUSTOM)
            derive_grad(&table[i]);
    for (size_t i = 0; i < ntable; i++) {
        FL_ASSERT(fl_map_find_str(&by_name, table[i].name) == NULL);
        fl_map_put_str(&by_name, table[i].name, &table[i]);
    }
}

static void ensure(void) { FL_ASSERT(pthread_once(&once, init) == 0); }

const FlOpInfo *fl_ops_find(const char *name) {
    ensure();
    return fl_map_find_str(&by_name, name);
}

const FlOpInfo *fl_ops_of(const FlOpDesc *op) {
    ensure();
    int *cache = (int *)&op->table_idx; /* logically const: a pure function of op->type */
    int k = __atomic_load_n(cache, __ATOMIC_RELAXED);
    if (k == 0) {
        const FlOpInfo *info = fl_map_find_str(&by_name, op->type);
        k = info ? (int)(info - table) + 1 : -1;
        __atomic_store_n(cache, k, __ATOMIC_RELAXED);
    }
    return k > 0 ? &table[k - 1] : NULL;
}

bool fl_ops_is(const FlOpDesc *op, FlOpId id) {
    const FlOpInfo *info = fl_ops_of(op);
    return info && !info->is_grad && info->id == id;
}

unsigned fl_ops_flags(const FlOpDesc *op) {
    const FlOpInfo *info = fl_ops_of(op);
    return info ? info->flags : 0;
}

const FlOpInfo *fl_ops_get(FlOpId id) {
    FL_ASSERT((unsigned)id < FL_OPID_COUNT);
    ensure();
    return &table[id];
}

size_t fl_ops_count(void) {
    ensure();
    return ntable;
}

const FlOpInfo *fl_ops_at(size_t i) {
    ensure();
    FL_ASSERT(i < ntable);
    return &table[i];
}

static const FlSlotInfo *find_slot(const FlSlotInfo *slots, int n, const char *name) {
    for (int i = 0; i < n; i++)
        if (strcmp(slots[i].name, name) == 0) return &slots[i];
    return NULL;
}

const FlSlotInfo *fl_ops_in_slot(const FlOpInfo *info, const char *slot) {
    return find_slot(info->ins, info->nins, slot);
}

const FlSlotInfo *fl_ops_out_slot(const FlOpInfo *info, const char *slot) {
    return find_slot(info->outs, info->nouts, slot);
}

const FlAttrInfo *fl_ops_attr(const FlOpInfo *info, const char *attr) {
    for (int i = 0; i < info->nattrs; i++)
        if (strcmp(info->attrs[i].name, attr) == 0) return &info->attrs[i];
    return NULL;
}

void fl_ops_lod_pairs(const FlProgram *p, const FlBlock *b, const FlOpDesc *op, FlLodPairs *out) {
    const FlOpInfo *info = fl_ops_of(op);
    if (!info || info->is_grad || !(info->flags & (FL_OPF_LOD_KEEP | FL_OPF_LOD_SAME))) return;
    const FlVarDesc *first = NULL;
    const char *first_slot = NULL;
    for (size_t s = 0; s < op->ins.len; s++)
        for (size_t i = 0; i < op->ins.data[s].nargs; i++) {
            const FlVarDesc *d = fl_ir_var_lookup(p, b, op->ins.data[s].args[i]);
            if (!d || d->lod_level == 0 || d == first) continue;
            if (!first) {
                first = d, first_slot = op->ins.data[s].name;
                continue;
            }
            bool same = d->lod_level == first->lod_level;
            for (int k = 0; same && k < d->lod_level; k++) same = strcmp(d->lod[k], first->lod[k]) == 0;
            if (!same) FL_VEC_PUSH(out, ((FlLodPair){{first_slot, op->ins.data[s].name}, {first, d}}));
        }
}

const FlAttrInfo *fl_ops_int_twin(const FlOpInfo *info, const char *attr) {
    char twin[64];
    if (snprintf(twin, sizeof twin, "int_%s", attr) >= (int)sizeof twin) return NULL;
    const FlAttrInfo *a = fl_ops_attr(info, twin);
    return a && a->type == FL_ATTR_INTS ? a : NULL;
}

bool fl_ops_needs_int_twin(int64_t v) { return v > ((int64_t)1 << 53) || v < -((int64_t)1 << 53); }

static const char *type_name(FlAttrType t) {
    switch (t) {
    case FL_ATTR_INT: return "int";
    case FL_ATTR_FLOAT: return "float";
    case FL_ATTR_STRING: return "string";
    case FL_ATTR_BOOL: return "bool";
    case FL_ATTR_INTS: return "ints";
    case FL_ATTR_FLOATS: return "floats";
    case FL_ATTR_STRINGS: return "strings";
    case FL_ATTR_BLOCK: return "block";
    case FL_ATTR_BLOCKS: return "blocks";
    case FL_ATTR_TYPE_COUNT: break;
    }
    return "?";
}

static FlStatus check_slots(const FlOpDesc *op, const char *what, const FlSlot *slots,
                            size_t nslots, const FlSlotInfo *infos, int ninfos, FlErr *e) {
    for (size_t i = 0; i < nslots; i++) {
        const FlSlotInfo *si = find_slot(infos, ninfos, slots[i].name);
        if (!si) return fl_err(e, "%s: unknown %s slot '%s'", op->type, what, slots[i].name);
        if (!si->list && slots[i].nargs > 1)
            return fl_err(e, "%s: %s '%s' takes one var, found %zu", op->type, what,
                          slots[i].name, slots[i].nargs);
    }
    for (int k = 0; k < ninfos; k++) {
        if (infos[k].optional || infos[k].list) continue; /* a list may hold zero vars */
        const FlSlot *s = NULL;
        for (size_t i = 0; i < nslots; i++)
            if (strcmp(slots[i].name, infos[k].name) == 0) s = &slots[i];
        if (!s || s->nargs == 0)
            return fl_err(e, "%s: missing %s '%s'", op->type, what, infos[k].name);
    }
    return FL_OK;
}

/* The values that the table's types cannot say. A timer's seconds: Go takes any duration, but
 * NaN, a negative wait or one past 1e9 s (31 years) is a mistake, and a ticker's period below
 * 1e-6 s would spin. Checked here, the rule holds at the user's line when flc builds the op and
 * for any op flrun loads. */
static FlStatus check_values(const FlOpDesc *op, const FlOpInfo *info, FlErr *e) {
    /* an int twin (fl_ops_int_twin) holds the float attribute's values exactly: as many, each
     * the float rounded */
    for (size_t i = 0; i < op->attrs.len; i++) {
        const FlAttr *a = &op->attrs.data[i], *t;
        const FlAttrInfo *ti = fl_ops_int_twin(info, a->name);
        if (!ti || !(t = fl_ir_op_attr(op, ti->name)) || t->type != FL_ATTR_INTS || t->n == 0) continue;
        size_t n = a->type == FL_ATTR_FLOATS ? a->n : 1;
        const double *f = a->type == FL_ATTR_FLOATS ? a->floats : &a->f;
        if (t->n != n)
            return fl_err(e, "%s: attribute '%s' holds %zu values and '%s' %zu; they must hold as many", op->type,
                          ti->name, t->n, a->name, n);
        for (size_t k = 0; k < n; k++)
            if ((double)t->ints[k] != f[k])
                return fl_err(e, "%s: attribute '%s' value %zu is %lld, but '%s' holds %g: they must be the same number",
                              op->type, ti->name, k, (long long)t->ints[k], a->name, f[k]);
    }
    bool tick = info->id == FL_OPID_time_tick;
    if (info->is_grad || (!tick && info->id != FL_OPID_time_after && info->id != FL_OPID_time_sleep)) return FL_OK;
    const FlAttr *a = fl_ir_op_attr(op, "seconds");
    double s = a ? a->f : 0, lo = tick ? 1e-6 : 0;
    if (!(s >= lo && s <= 1e9))
        return fl_err(e, "%s: seconds must be in [%g, 1e9]%s, found %g", op->type, lo,
                      tick ? " (a ticker's period)" : "", s);
    return FL_OK;
}

FlStatus fl_ops_check(const FlOpDesc *op, FlErr *e) {
    const FlOpInfo *info = fl_ops_of(op);
    if (!info) return fl_err(e, "unknown op '%s'", op->type);
    if (check_slots(op, "input", op->ins.data, op->ins.len, info->ins, info->nins, e) ||
        check_slots(op, "output", op->outs.data, op->outs.len, info->outs, info->nouts, e))
        return FL_ERROR;
    for (size_t i = 0; i < op->attrs.len; i++) {
        const FlAttr *a = &op->attrs.data[i];
        const FlAttrInfo *ai = fl_ops_attr(info, a->name);
        if (!ai) return fl_err(e, "%s: unknown attribute '%s'", op->type, a->name);
        if (ai->type != a->type)
            return fl_err(e, "%s: attribute '%s' must be %s, found %s", op->type, a->name,
                          type_name(ai->type), type_name(a->type));
    }
    for (int k = 0; k < info->nattrs; k++)
        if (info->attrs[k].required && !fl_ir_op_attr(op, info->attrs[k].name))
            return fl_err(e, "%s: missing attribute '%s'", op->type, info->attrs[k].name);
    return check_values(op, info, e);
}

void fl_ops_fill_defaults(FlOpDesc *op) {
    const FlOpInfo *info = fl_ops_of(op);
    if (!info) return;
    for (int k = 0; k < info->nattrs; k++) {
        const FlAttrInfo *ai = &info->attrs[k];
        if (ai->required || ai->optional || fl_ir_op_attr(op, ai->name)) continue;
        const FlAttr *d = &ai->dflt;
        switch (d->type) {
        case FL_ATTR_INT: fl_ir_op_set_int(op, ai->name, d->i); break;
        case FL_ATTR_FLOAT: fl_ir_op_set_float(op, ai->name, d->f); break;
        case FL_ATTR_STRING: fl_ir_op_set_string(op, ai->name, d->s); break;
        case FL_ATTR_BOOL: fl_ir_op_set_bool(op, ai->name, d->i != 0); break;
        case FL_ATTR_INTS: fl_ir_op_set_ints(op, ai->name, d->ints, d->n); break;
        case FL_ATTR_FLOATS: fl_ir_op_set_floats(op, ai->name, d->floats, d->n); break;
        case FL_ATTR_STRINGS:
            fl_ir_op_set_strings(op, ai->name, (const char *const *)d->strs, d->n);
            break;
        case FL_ATTR_BLOCK: fl_ir_op_set_block(op, ai->name, (int)d->i); break;
        case FL_ATTR_BLOCKS: fl_ir_op_set_blocks(op, ai->name, d->ints, d->n); break;
        case FL_ATTR_TYPE_COUNT: FL_UNREACHABLE();
        }
    }
}

/* ---- Markdown ---- */

static void md_default(FlBuf *out, const FlAttr *d) {
    switch (d->type) {
    case FL_ATTR_INT:
    case FL_ATTR_BLOCK: fl_buf_printf(out, "`%lld`", (long long)d->i); break;
    case FL_ATTR_FLOAT: fl_buf_printf(out, "`%g`", d->f); break;
    case FL_ATTR_STRING: fl_buf_printf(out, "`\"%s\"`", d->s); break;
    case FL_ATTR_BOOL: fl_buf_puts(out, d->i ? "`true`" : "`false`"); break;
    case FL_ATTR_INTS:
    case FL_ATTR_BLOCKS:
    case FL_ATTR_FLOATS:
    case FL_ATTR_STRINGS:
        fl_buf_puts(out, "`[");
        for (size_t k = 0; k < d->n; k++) {
            if (k) fl_buf_puts(out, ", ");
            if (d->type == FL_ATTR_FLOATS) fl_buf_printf(out, "%g", d->floats[k]);
            else if (d->type == FL_ATTR_STRINGS) fl_buf_printf(out, "\"%s\"", d->strs[k]);
            else fl_buf_printf(out, "%lld", (long long)d->ints[k]);
        }
        fl_buf_puts(out, "]`");
        break;
    case FL_ATTR_TYPE_COUNT: FL_UNREACHABLE();
    }
}

static void md_slots(FlBuf *out, const char *title, const FlSlotInfo *s, int n) {
    fl_buf_printf(out, "- %s:", title);
    if (n == 0) fl_buf_puts(out, " none");
    for (int i = 0; i < n; i++) {
        fl_buf_printf(out, "%s `%s`", i ? "," : "", s[i].name);
        if (s[i].list) fl_buf_puts(out, " (list)");
        if (s[i].optional) fl_buf_puts(out, " (optional)");
    }
    fl_buf_putc(out, '\n');
}

static void md_attrs(FlBuf *out, const FlOpInfo *o) {
    if (o->nattrs == 0) {
        fl_buf_puts(out, "- Attributes: none\n");
        return;
    }
    fl_buf_puts(out, "- Attributes:\n");
    for (int k = 0; k < o->nattrs; k++) {
        const FlAttrInfo *a = &o->attrs[k];
        fl_buf_printf(out, "  - `%s` (%s): ", a->name, type_name(a->type));
        if (a->required) fl_buf_puts(out, "required");
        else if (a->optional) fl_buf_puts(out, "optional");
        else fl_buf_puts(out, "default "), md_default(out, &a->dflt);
        fl_buf_putc(out, '\n');
    }
}

static void md_grad(FlBuf *out, const FlOpInfo *o) {
    fl_buf_puts(out, "- Gradient: ");
    switch (o->grad) {
    case FL_GRAD_NONE: fl_buf_puts(out, "none (append_backward reports a path through it)"); break;
    case FL_GRAD_DEFAULT: fl_buf_printf(out, "`%s_grad` (default)", o->name); break;
    case FL_GRAD_CUSTOM: fl_buf_printf(out, "`%s_grad` (custom)", o->name); break;
    case FL_GRAD_STOP: fl_buf_puts(out, "none; stops gradients (no error)"); break;
    }
    fl_buf_putc(out, '\n');
}

void fl_ops_markdown(FlBuf *out) {
    ensure();
    fl_buf_puts(out,
                "# Op reference\n\n"
                "Generated from `compiler/ops.def` by `fl_ops_markdown` (compiler/ops.c); do not "
                "edit by hand\n(`FL_UPDATE_DOCS=1 build/tests/compiler/test_ops` rewrites it).\n\n"
                "Slots marked (list) hold any number of vars, (optional) may be absent. Shapes use "
                "-1 for the\nunknown batch dimension. A `dtype` attribute is 0 float32, 1 float64, "
                "2 int32, 3 int64 or\n4 bool. Gradient ops (`<op>_grad`) are listed at the "
                "end.\n\nInteger `+`, `-`, `*` (elementwise, `sum`, `increment`) wrap in two's "
                "complement on\noverflow, as in Go: `INT64_MAX + 1` is `INT64_MIN`.\n");
    fl_buf_puts(out,
                "\n"
                "## Where an op lives\n"
                "\n"
                "The pieces of an op are found by its family's name (`nn` below: `compiler/ops/nn.def`,\n"
                "`compiler/infer_nn.c`, `runtime/core/ops_nn.c`, `stdlib/fluid/layers/_nn.fl`):\n"
                "\n"
                "| family | table line (`compiler/ops/`) | shape rule (`compiler/`) | adapter (`runtime/core/`) | kernel (`runtime/kernels/`) | layer (`stdlib/fluid/layers/`) |\n"
                "|---|---|---|---|---|---|\n"
                "| math | `fill.def`, `elementwise.def`, `logic.def` | `infer_math.c` | `ops_math.c` | `fill.c`, `elementwise.c`, `activation.c` | `_math.fl`, `tensor.fl`, `ops.fl`, `control_flow.fl` |\n"
                "| nn | `linalg.def`, `reduce.def`, `nn.def` | `infer_nn.c` | `ops_nn.c` | `linalg.c`, `gemm.c`, `reduce.c`, `conv.c`, `dnnl.c`, `norm.c` | `_nn.fl` |\n"
                "| nn2 | `reduce.def`, `metric.def`, `nn.def` | `infer_nn2.c` | `ops_nn2.c` | `nn2.c` | `_nn2.fl`, `metric_op.fl` |\n"
                "| layers | `layers.def` | `infer_layers.c` | `ops_layers.c` | `activation_param.c`, `fill_batch.c`, `reduce_minmax.c`, `index.c` | `_layers.fl` |\n"
                "| shape | `shape.def`, `metric.def` | `infer_shape.c` | `ops_shape.c` | `shape.c` | `_nn.fl`, `tensor.fl`, `metric_op.fl` |\n"
                "| seq, seqshape | `seq.def`, `seqshape.def` | `infer_seq.c`, `infer_seqshape.c` | `ops_seq.c`, `ops_seqshape.c` | `seq.c`, `seqshape.c` | `_seq.fl`, `_seqshape.fl` |\n"
                "| rnn, crf | `rnn.def`, `crf.def` | `infer_rnn.c`, `infer_crf.c` | `ops_rnn.c`, `ops_crf.c` | `rnn.c`, `crf.c` | `_rnn.fl`, `_crf.fl` |\n"
                "| array | `array.def` | `infer_array.c` | `ops_array.c` | `beam.c` | `control_flow.fl`, `_beam.fl` |\n"
                "| optim | `optim.def` | `infer_optim.c` | `ops_optim.c`, `ops_shape.c` | `optim.c`, `optim_rules.c` | `fluid/optimizer.fl` |\n"
                "| control, chan, dist | `control.def`, `chan.def`, `dist.def` | `infer_control.c`, `infer_chan.c`, `infer_dist.c` | `ops_control.c`, `ops_rnn_ctl.c`, `ops_chan.c`, `ops_dist.c` | `runtime/sched/`, `runtime/mpi/` | `fluid/rnn.fl`, `control_flow.fl`, `io.fl` |\n"
                "| detection | `detection.def` | `infer_detection.c` | `ops_detection.c` | `detection.c`, `detection_loss.c`, "
                "`detection_match.c` | `detection.fl`, `_detection.fl` |\n"
                "| tensor | `tensor.def` | `infer_tensor.c` | `ops_tensor.c` | `tensor.c` | `_tensor.fl`, `tensor.fl`, `ops.fl` |\n"
                "| proposals | `proposals.def` | `infer_proposals.c` | `ops_proposals.c` | `proposals.c` | `detection.fl`, "
                "`_proposals.fl` |\n"
                "| conv3, vision, roi | `conv3.def`, `vision.def`, `roi.def` | `infer_conv3.c`, `infer_vision.c`, "
                "`infer_roi.c` | `ops_conv3.c`, `ops_vision.c`, `ops_roi.c` | `conv3.c`, `dnnl.c`, `vision.c`, `roi.c` | "
                "`_conv3.fl`, `_vision.fl`, `_roi.fl` |\n"
                "| ctc, rankloss, seqnlp | `ctc.def`, `rankloss.def`, `seqnlp.def` | `infer_ctc.c`, `infer_rankloss.c`, "
                "`infer_seqnlp.c` | `ops_ctc.c`, `ops_rankloss.c`, `ops_seqnlp.c` | `ctc.c`, `rankloss.c`, `seqnlp.c` | "
                "`_ctc.fl`, `_rankloss.fl`, `_seqnlp.fl` |\n"
                "| vocab | `vocab.def` | `infer_vocab.c` | `ops_vocab.c` | `vocab.c` | `_vocab.fl` |\n"
                "| cudnnlstm | `cudnnlstm.def` | `infer_cudnnlstm.c` | `ops_cudnnlstm.c` | `cudnnlstm.c` | `_cudnnlstm.fl` |\n"
                "| statnorm | `statnorm.def` | `infer_statnorm.c` | `ops_statnorm.c` | `statnorm.c` | `_statnorm.fl` |\n"
                "| gridsample | `gridsample.def` | `infer_gridsample.c` | `ops_gridsample.c` | `gridsample.c` | `_gridsample.fl` |\n"
                "| driver | `driver.def` | `infer_driver.c` | `ops_driver.c` (host: `driver.h`) | — | "
                "`fluid/executor.fl`, `threading.fl`, `time.fl` (and `lang/driver.c`) |\n"
                "| reader | `reader.def` | `infer_reader.c` | `ops_reader.c` (over `dataset/`) | — | "
                "`paddle/reader.fl`, `paddle/dataset/*.fl`, `fluid/data_feeder.fl` (and `lang/driver_data.c`) |\n"
                "| perspective | `perspective.def` | `infer_perspective.c` | `ops_perspective.c` | `perspective.c` | "
                "`detection.fl`, `_perspective.fl` |\n"
                "| quant | `quant.def`, `quant_int8.def` | `infer_quant.c` | `ops_quant.c` | `quant.c`, `quant_int8.c` (int8 pool2d: `conv.c`) | `contrib/quantize.fl`, `contrib/calibrator.fl` |\n"
                "| masks | `masks.def` | `infer_masks.c` | `ops_masks.c` | `masks.c` | `detection.fl`, `_masks.fl` |\n"
                "| report | `report.def` | `infer_report.c` | `ops_report.c` (host: `report_host.h`, given by "
                "`runtime/train/train.c`) | — | `fluid/_train.fl` (`fluid.train`'s loop; for a format-2 bundle "
                "`compiler/ir/train_driver.c`) |\n"
                "| ctr | `ctr.def` | `infer_ctr.c` | `ops_ctr.c` | `ctr.c` | `_ctr.fl` |\n"
                "| seqedit | `seqedit.def` | `infer_seqedit.c` | `ops_seqedit.c` | `seqedit.c` | `_seqedit.fl` |\n"
                "| imgsel | `imgsel.def` | `infer_imgsel.c` | `ops_imgsel.c` | `imgsel.c` | `_imgsel.fl` |\n"
                "| tree | `tree.def` | `infer_tree.c` | `ops_tree.c` | `tree.c` | `_tree.fl` |\n"
                "| lodfile | `lodfile.def` | `infer_lodfile.c` | `ops_lodfile.c` (over `runtime/lodstream.c`) | — | "
                "`io.fl` |\n"
                "\n"
                "A new op needs: its line at the end of its family's section (a new family: a section in\n"
                "`compiler/ops/layers_more.def` or a file of its own, included from `compiler/ops.def`), which\n"
                "gives its id, slots, attributes, gradient kind and this reference (`FL_UPDATE_DOCS=1` rewrites\n"
                "the page); a case in `fl_infer_op`'s switch (`compiler/infer.c`, in its family's group; the build\n"
                "fails until it has one) calling a rule of `infer_<family>.c`, declared in `infer_impl.h`; the\n"
                "adapters `fl_adapter_<op>` and, when it has a gradient, `fl_adapter_<op>_grad` in\n"
                "`ops_<family>.c` (a missing one fails the link); its kernels, with tests against a reference and\n"
                "finite differences for the gradient (docs/kernels.md, \"Tests\"); and its layer in the\n"
                "`stdlib/fluid/layers/` module Fluid puts it in, listed in that module's `__all__`. Gradient ops\n"
                "need no code in `compiler/backward.c`: `append_backward` builds `<op>_grad` from the op's line\n"
                "(its `FL_GRAD_SLOTS` line for a custom gradient).\n");
    for (size_t k = 0, i = 0; k < FL_ARRAY_LEN(sections); k++) {
        if (sections[k]) {
            fl_buf_printf(out, "\n## %s\n", sections[k]);
            continue;
        }
        const FlOpInfo *o = &table[i++];
        fl_buf_printf(out, "\n### %s\n\n%s\n\n", o->name, fl_ops_describe(o->id));
        md_slots(out, "Inputs", o->ins, o->nins);
        md_slots(out, "Outputs", o->outs, o->nouts);
        md_attrs(out, o);
        md_grad(out, o);
        /* every op says how it treats sequences (docs/sequences.md) */
        fl_buf_puts(out, (o->flags & FL_OPF_LOD_KEEP)
                             ? "- LoD: kept (the outputs take the first LoD input's; the other LoD inputs must be cut "
                               "into the same sequences)\n"
                         : (o->flags & FL_OPF_LOD_SAME)
                             ? "- LoD: taken (the outputs have none unless the layer sets it); its LoD inputs must be "
                               "cut into the same sequences\n"
                         : (o->flags & FL_OPF_LOD_ANY) ? "- LoD: taken (the outputs have none unless the layer sets it)\n"
                                                       : "- LoD: refused (a LoD input is a compile error)\n");
        if (o->flags & ~(FL_OPF_LOD_KEEP | FL_OPF_LOD_ANY | FL_OPF_LOD_SAME)) {
            fl_buf_puts(out, "- Flags:");
            if (o->flags & FL_OPF_SIDE_EFFECT) fl_buf_puts(out, " side effect (never pruned);");
            if (o->flags & FL_OPF_CONTROL) fl_buf_puts(out, " control (runs sub-blocks);");
            if (o->flags & FL_OPF_OPTIMIZE) fl_buf_puts(out, " optimizer update;");
            if (o->flags & FL_OPF_DIST) fl_buf_puts(out, " distributed;");
            if (o->flags & FL_OPF_LONG) fl_buf_puts(out, " long-running (runs in a scheduler blocking region);");
            if (o->flags & FL_OPF_CHAN) fl_buf_puts(out, " concurrency (goroutines, channels);");
            if (o->flags & FL_OPF_STORAGE) fl_buf_puts(out, " storage dtypes (takes float16, int8 and uint8 tensors);");
            out->data[out->len - 1] = '\n'; /* the last ";" */
        }
    }
    fl_buf_puts(out, "\n## Gradient ops\n\nEach has the attributes of its forward op. `S@GRAD` "
                     "is the gradient of the forward\nslot `S`; unneeded gradient outputs are "
                     "absent or `@EMPTY@`.\n\n");
    fl_buf_puts(out, "| op | inputs (`*`: list) | outputs |\n|---|---|---|\n");
    for (size_t i = FL_OPID_COUNT; i < ntable; i++) {
        const FlOpInfo *o = &table[i];
        fl_buf_printf(out, "| %s |", o->name);
        for (int k = 0; k < o->nins; k++)
            fl_buf_printf(out, "%s`%s%s`", k ? ", " : " ", o->ins[k].name,
                          o->ins[k].list ? "*" : "");
        fl_buf_puts(out, " |");
        for (int k = 0; k < o->nouts; k++)
            fl_buf_printf(out, "%s`%s%s`", k ? ", " : " ", o->outs[k].name,
                          o->outs[k].list ? "*" : "");
        fl_buf_puts(out, " |\n");
    }
}
