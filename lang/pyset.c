/* pyset.c: Python's sets at compile time: the display {a, b}, the builtin set(iterable), `in`,
 * len(), iteration (fl_ev_as_list gives the elements) and the methods add, discard, remove,
 * update, union, copy. A set (VK_SET) keeps its distinct elements in list.items in insertion
 * order (Python's order is arbitrary; this one is reproducible). Elements must be hashable as
 * Python's are: a list, dict or set is an error. fetch_list={g_img} and no_grad_set=set([...])
 * take sets (docs/driver.md). */
#include <string.h>

#include "lang/eval_impl.h"

static FlValue *set_new(Ctx *c) {
    FlValue *s = fl_v_list(c, VK_LIST);
    s->kind = VK_SET;
    return s;
}

/* Adds x unless an equal element is there; false after reporting. */
static bool set_add(Ctx *c, FlValue *s, FlValue *x, FlSpan sp) {
    if (x->kind == VK_ERROR) return false;
    if (x->kind == VK_LIST || x->kind == VK_DICT || x->kind == VK_SET) {
        fl_ev_error(c, sp, "unhashable type: '%s' (a set holds numbers, strings, tuples, Vars, ...)", fl_v_type_name(x));
        return false;
    }
    for (size_t i = 0; i < s->list.len; i++) {
        bool ok;
        if (fl_v_equal(c, x, s->list.items[i], sp, &ok)) return true;
        if (!ok) return false;
    }
    fl_v_list_push(c, s, x);
    return true;
}

/* Adds every element of iterable it. */
static bool set_add_all(Ctx *c, FlValue *s, FlValue *it, FlSpan sp) {
    FlValue *l = fl_ev_as_list(c, it, sp);
    if (l->kind == VK_ERROR) return false;
    for (size_t i = 0; i < l->list.len; i++)
        if (!set_add(c, s, l->list.items[i], sp)) return false;
    return true;
}

FlValue *fl_ev_set_display(Ctx *c, Env *e, FlAst *n) {
    FlValue *s = set_new(c);
    for (size_t i = 0; i < n->list.items.len; i++) {
        FlAst *item = n->list.items.items[i];
        if (item->kind == FL_AST_STARRED) {
            FlValue *xs = fl_ev_expr(c, e, item->unop.e);
            if (xs->kind == VK_ERROR || !set_add_all(c, s, xs, item->span)) return c->error;
            continue;
        }
        if (!set_add(c, s, fl_ev_expr(c, e, item), item->span)) return c->error;
    }
    return s;
}

static FlValue *b_set(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("set", "iterable=", 1);
    FlValue *s = set_new(c);
    return !v[0] || set_add_all(c, s, v[0], a->span) ? s : c->error;
}

static FlValue *m_add(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("add", "elem", 1);
    return set_add(c, self, v[0], a->span) ? c->none : c->error;
}

static FlValue *m_update(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("update", "*others", 1);
    for (size_t i = 0; i < v[0]->list.len; i++)
        if (!set_add_all(c, self, v[0]->list.items[i], a->span)) return c->error;
    return c->none;
}

static FlValue *m_union(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("union", "*others", 1);
    FlValue *s = set_new(c);
    if (!set_add_all(c, s, self, a->span)) return c->error;
    for (size_t i = 0; i < v[0]->list.len; i++)
        if (!set_add_all(c, s, v[0]->list.items[i], a->span)) return c->error;
    return s;
}

static FlValue *m_copy(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("copy", "", 0);
    (void)v;
    FlValue *s = set_new(c);
    return set_add_all(c, s, self, a->span) ? s : c->error;
}

/* discard(x) and remove(x): remove's x must be there (Python's KeyError). */
static FlValue *drop(Ctx *c, FlValue *self, CallArgs *a, bool must) {
    ARGS(must ? "remove" : "discard", "elem", 1);
    for (size_t i = 0; i < self->list.len; i++) {
        bool ok;
        bool same = fl_v_equal(c, v[0], self->list.items[i], a->span, &ok);
        if (!ok) return c->error;
        if (!same) continue;
        memmove(self->list.items + i, self->list.items + i + 1, (self->list.len - i - 1) * sizeof *self->list.items);
        self->list.len--;
        return c->none;
    }
    if (!must) return c->none;
    FlBuf b = {0};
    bool ok = fl_v_repr_at(c, v[0], &b, a->span);
    if (ok) fl_ev_error(c, a->span, "set.remove(x): x is not in the set (KeyError: %s)", fl_buf_str(&b));
    fl_buf_free(&b);
    return c->error;
}
static FlValue *m_discard(Ctx *c, FlValue *self, CallArgs *a) { return drop(c, self, a, false); }
static FlValue *m_remove(Ctx *c, FlValue *self, CallArgs *a) { return drop(c, self, a, true); }

FlValue *fl_ev_set_method(Ctx *c, FlValue *s, const char *name, FlSpan sp) {
    static const NativeFn fns[] = {{"add", m_add},   {"update", m_update},   {"union", m_union},
                                   {"copy", m_copy}, {"discard", m_discard}, {"remove", m_remove}};
    for (size_t i = 0; i < FL_ARRAY_LEN(fns); i++)
        if (strcmp(fns[i].name, name) == 0) return fl_v_builtin(c, fns[i].name, fns[i].fn, s);
    return fl_ev_error(c, sp, "'set' object has no attribute '%s' (it has add, update, union, copy, discard, remove)",
                       name);
}

void fl_ev_pyset_install(Ctx *c) { fl_env_set(c->builtins, fl_intern_str(&c->in, "set"), fl_v_builtin(c, "set", b_set, NULL)); }
