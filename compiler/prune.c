/* prune.c: the inference program of a program (prune.h). */
#include "compiler/prune.h"

#include <stdlib.h>
#include <string.h>

typedef FL_VEC(const char *) Names;

static bool in(const char *const *v, size_t n, const char *s) {
    for (size_t i = 0; i < n; i++)
        if (strcmp(v[i], s) == 0) return true;
    return false;
}

/* Whether name is fed: one of feeds, or the offsets of a fed LoD var (a LoDTensor fed to a var
 * carries its offsets, as Fluid's feed of one does). */
static bool fed(const FlBlock *g, const char *const *feeds, size_t nfeeds, const char *name) {
    if (in(feeds, nfeeds, name)) return true;
    for (size_t i = 0; i < nfeeds; i++) {
        const FlVarDesc *d = fl_ir_var_find(g, feeds[i]);
        for (int k = 0; d && k < d->lod_level && k < FL_IR_MAX_LOD; k++)
            if (d->lod[k] && strcmp(d->lod[k], name) == 0) return true;
    }
    return false;
}

/* Marks name needed (once), with the offsets vars of a LoD var. */
static void need(FlMap *needed, Names *work, const FlBlock *g, const char *name) {
    if (fl_map_find_str(needed, name)) return;
    fl_map_put_str(needed, name, (void *)name);
    FL_VEC_PUSH(work, name);
    const FlVarDesc *d = fl_ir_var_find(g, name);
    for (int k = 0; d && k < d->lod_level && k < FL_IR_MAX_LOD; k++)
        if (d->lod[k]) need(needed, work, g, d->lod[k]);
}

/* The sub-blocks of op (its block and blocks attributes) into out; how many (at most max). */
static size_t sub_blocks(const FlProgram *p, const FlOpDesc *op, const FlBlock **out, size_t max) {
    size_t n = 0;
    for (size_t k = 0; k < op->attrs.len; k++) {
        const FlAttr *at = &op->attrs.data[k];
        size_t nb = at->type == FL_ATTR_BLOCK ? 1 : at->type == FL_ATTR_BLOCKS ? at->n : 0;
        for (size_t j = 0; j < nb && n < max; j++) {
            int64_t bi = at->type == FL_ATTR_BLOCK ? at->i : at->ints[j];
            if (bi > 0 && (size_t)bi < p->blocks.len) out[n++] = p->blocks.data[bi];
        }
    }
    return n;
}

#define MAX_SUB 64

/* Every var an op reads, its sub-blocks' ops included (what a while or a conditional_block reads
 * from outside them is read by the op). */
static void reads(const FlProgram *p, const FlOpDesc *op, FlMap *needed, Names *work, const FlBlock *g, int depth) {
    for (size_t s = 0; s < op->ins.len; s++)
        for (size_t a = 0; a < op->ins.data[s].nargs; a++) need(needed, work, g, op->ins.data[s].args[a]);
    if (depth > 64) return;
    const FlBlock *subs[MAX_SUB];
    size_t ns = sub_blocks(p, op, subs, MAX_SUB);
    for (size_t j = 0; j < ns; j++) {
        const FlBlock *sb = subs[j];
        for (size_t o = 0; o < sb->ops.len; o++) {
            reads(p, sb->ops.data[o], needed, work, g, depth + 1);
            /* what the sub-block writes to outer vars, it updates: they are read too */
            for (size_t s = 0; s < sb->ops.data[o]->outs.len; s++)
                for (size_t a = 0; a < sb->ops.data[o]->outs.data[s].nargs; a++)
                    if (fl_ir_var_find(g, sb->ops.data[o]->outs.data[s].args[a]))
                        need(needed, work, g, sb->ops.data[o]->outs.data[s].args[a]);
        }
    }
}

static bool writes_needed(const FlOpDesc *op, const FlMap *needed) {
    for (size_t s = 0; s < op->outs.len; s++)
        for (size_t a = 0; a < op->outs.data[s].nargs; a++)
            if (fl_map_find_str(needed, op->outs.data[s].args[a])) return true;
    return false;
}

/* Whether op writes name, itself or in its sub-blocks. */
static bool writes(const FlProgram *p, const FlOpDesc *op, const char *name, int depth) {
    for (size_t s = 0; s < op->outs.len; s++)
        for (size_t a = 0; a < op->outs.data[s].nargs; a++)
            if (strcmp(op->outs.data[s].args[a], name) == 0) return true;
    if (depth > 64) return false;
    const FlBlock *subs[MAX_SUB];
    size_t ns = sub_blocks(p, op, subs, MAX_SUB);
    for (size_t j = 0; j < ns; j++)
        for (size_t o = 0; o < subs[j]->ops.len; o++)
            if (writes(p, subs[j]->ops.data[o], name, depth + 1)) return true;
    return false;
}

FlProgram *fl_prune_for_inference(const FlProgram *p, const char *const *feeds, size_t nfeeds,
                                  const char *const *targets, size_t ntargets, FlErr *e) {
    const FlBlock *g = fl_ir_block(p, 0);
    if (ntargets == 0) {
        fl_err(e, "no targets: name the vars the inference program computes");
        return NULL;
    }
    for (size_t i = 0; i < nfeeds; i++)
        if (!fl_ir_var_find(g, feeds[i])) {
            fl_err(e, "feed '%s' is not a var of the program's global block", feeds[i]);
            return NULL;
        }
    for (size_t i = 0; i < ntargets; i++)
        if (!fl_ir_var_find(g, targets[i])) {
            fl_err(e, "target '%s' is not a var of the program's global block", targets[i]);
            return NULL;
        }
    FlMap needed;
    fl_map_init(&needed);
    Names work = {0};
    bool *keep = fl_xcalloc(g->ops.len + 1, sizeof *keep);
    for (size_t i = 0; i < ntargets; i++) need(&needed, &work, g, targets[i]);
    /* backwards: an op is kept when it writes a needed var (a feed is given, not computed: what
     * writes it is not kept), and then what it reads is needed */
    for (size_t i = g->ops.len; i-- > 0;) {
        const FlOpDesc *op = g->ops.data[i];
        bool only_feeds = true;
        for (size_t s = 0; s < op->outs.len && only_feeds; s++)
            for (size_t a = 0; a < op->outs.data[s].nargs && only_feeds; a++)
                only_feeds = fed(g, feeds, nfeeds, op->outs.data[s].args[a]) ||
                             !fl_map_find_str(&needed, op->outs.data[s].args[a]);
        if (!writes_needed(op, &needed) || only_feeds) continue;
        keep[i] = true;
        reads(p, op, &needed, &work, g, 0);
        for (size_t s = 0; s < op->outs.len; s++) /* what it writes stays declared */
            for (size_t a = 0; a < op->outs.data[s].nargs; a++) need(&needed, &work, g, op->outs.data[s].args[a]);
    }
    /* every needed var is fed, persistable (a parameter, loaded with the model) or computed by a
     * kept op before it is read */
    FlProgram *out = NULL;
    for (size_t w = 0; w < work.len; w++) {
        const char *n = work.data[w];
        const FlVarDesc *d = fl_ir_var_find(g, n);
        if (!d || d->persistable || fed(g, feeds, nfeeds, n)) continue;
        bool made = false;
        for (size_t i = 0; i < g->ops.len && !made; i++) made = keep[i] && writes(p, g->ops.data[i], n, 0);
        if (!made) {
            fl_err(e, "the targets need '%s', which is neither fed nor computed from the feeds%s", n,
                   d->fed ? " (it is a data var: add it to the feeds)" : "");
            goto done;
        }
    }
    out = fl_ir_program_clone(p);
    FlBlock *ob = fl_ir_block(out, 0);
    for (size_t i = g->ops.len; i-- > 0;)
        if (!keep[i]) fl_ir_op_remove(ob, i);
    /* the vars of block 0 that nothing kept refers to go (the optimizer's state, the label) */
    for (size_t i = g->vars.len; i-- > 0;) {
        const char *n = g->vars.data[i]->name;
        if (!fl_map_find_str(&needed, n) && !fed(g, feeds, nfeeds, n)) fl_ir_var_remove(ob, n);
    }
    /* test mode, as clone(for_test=True) */
    for (size_t b = 0; b < out->blocks.len; b++) {
        FlBlock *bl = out->blocks.data[b];
        for (size_t j = 0; j < bl->ops.len; j++)
            if (fl_ir_op_attr(bl->ops.data[j], "is_test")) fl_ir_op_set_bool(bl->ops.data[j], "is_test", true);
    }
done:
    free(keep);
    FL_VEC_FREE(&work);
    fl_map_fini(&needed);
    return out;
}
