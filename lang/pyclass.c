/* pyclass.c: user classes of the compile-time interpreter (`class`, instances, methods,
 * single inheritance, super()) and the exception classes that `raise` takes.
 *
 * How: a class is a VK_CLASS value (name, base, attributes); its body runs once, in a scope of
 * its own whose bindings become the class's attributes. An instance is a VK_RECORD whose cls is
 * its class: an attribute is looked up in the instance, then in the class and its bases, and a
 * function found on a class comes back bound to the instance (a VK_FUNC with self). super()
 * is a record that searches from the base of the method's class and binds to the instance.
 *
 * Invariants: the methods of a class close over the scope around the class statement, not over
 * the class body (as in Python, a method sees the class's names only through self or the
 * class); a class has at most one base, defined before it, so the base chain has no cycle.
 */
#include "lang/eval_impl.h"

#include <string.h>

FlValue *fl_ev_class_attr(FlValue *cls, const char *name) {
    for (; cls; cls = cls->cls.base) {
        FlValue *v = fl_map_find_str(&cls->cls.attrs->map, name);
        if (v) return v;
    }
    return NULL;
}

FlValue *fl_ev_bind_method(Ctx *c, FlValue *f, FlValue *self) {
    if (f->kind != VK_FUNC || f->func.self) return f;
    FlValue *m = fl_v_new(c, VK_FUNC);
    *m = *f;
    m->func.self = self;
    return m;
}

bool fl_ev_is_subclass(FlValue *sub, FlValue *cls) {
    if (!cls || cls->kind != VK_CLASS) return false;
    for (; sub && sub->kind == VK_CLASS; sub = sub->cls.base)
        if (sub == cls) return true;
    return false;
}

static FlValue *exception_class(Ctx *c) {
    return fl_env_find(c->builtins, fl_intern_str(&c->in, "BaseException"));
}

/* ------------------------------------------------------------------ decorators */

/* staticmethod(f): called as it is, never bound. */
static FlValue *static_call(Ctx *c, FlValue *self, CallArgs *a) { return fl_ev_call(c, self, a); }

static FlValue *b_staticmethod(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("staticmethod", "func", 1);
    return fl_v_builtin(c, "staticmethod", static_call, v[0]);
}

/* classmethod(f) and property(f): records that an attribute lookup on a class or an instance
 * turns into f bound to the class, or into f(instance). */
static FlValue *wrapper(Ctx *c, CallArgs *a, const char *type) {
    ARGS(type, "func", 1);
    FlValue *r = fl_v_record(c, type);
    fl_v_rec_set(c, r, "__func__", v[0]);
    return r;
}
static FlValue *b_classmethod(Ctx *c, FlValue *self, CallArgs *a) { return wrapper(c, a, "classmethod"); }
static FlValue *b_property(Ctx *c, FlValue *self, CallArgs *a) { return wrapper(c, a, "property"); }

static bool is_wrapper(const FlValue *v, const char *type) {
    return v->kind == VK_RECORD && !v->rec.cls && strcmp(v->rec.type, type) == 0;
}

/* The function a class attribute holds: itself, or the one staticmethod, classmethod or
 * property wraps; NULL if none. */
static FlValue *method_func(FlValue *v) {
    if (v->kind == VK_BUILTIN && v->builtin.fn == static_call) v = v->builtin.self;
    else if (is_wrapper(v, "classmethod") || is_wrapper(v, "property")) v = fl_map_find_str(&v->rec.attrs->map, "__func__");
    return v && v->kind == VK_FUNC ? v : NULL;
}

FlValue *fl_ev_class_member(Ctx *c, FlValue *v, FlValue *cls, FlValue *obj, FlSpan sp) {
    if (is_wrapper(v, "classmethod")) return fl_ev_bind_method(c, method_func(v) ? method_func(v) : v, cls);
    if (is_wrapper(v, "property")) {
        if (!obj) return v;
        FlValue *f = fl_map_find_str(&v->rec.attrs->map, "__func__");
        return fl_ev_call_simple(c, f, sp, &obj, 1);
    }
    return obj ? fl_ev_bind_method(c, v, obj) : v;
}

FlValue *fl_ev_decorate(Ctx *c, Env *e, FlAstList *decos, FlValue *v) {
    if (!decos->len || v->kind == VK_ERROR) return v;
    FlValue **ds = fl_arena_alloc(&c->arena, decos->len * sizeof *ds);
    for (size_t i = 0; i < decos->len; i++) {
        ds[i] = fl_ev_expr(c, e, decos->items[i]);
        if (ds[i]->kind == VK_ERROR) return c->error;
    }
    for (size_t i = decos->len; i-- > 0 && v->kind != VK_ERROR;)
        v = fl_ev_call_simple(c, ds[i], decos->items[i]->span, &v, 1);
    return v;
}

Flow fl_ev_class(Ctx *c, Env *e, FlAst *s) {
    FlValue *base = NULL;
    if (s->cls.base) {
        base = fl_ev_expr(c, e, s->cls.base);
        if (base->kind == VK_ERROR) return FLOW_ERROR;
        if (base->kind == VK_BUILTIN && strcmp(base->builtin.name, "object") == 0) base = NULL;
        else if (base->kind != VK_CLASS) {
            fl_ev_error(c, s->cls.base->span, "a class derives from a class, found %s", fl_v_type_name(base));
            return FLOW_ERROR;
        }
    }
    FlValue *cls = fl_v_new(c, VK_CLASS);
    cls->cls.name = s->cls.name;
    cls->cls.base = base;
    cls->cls.attrs = fl_env_new(c, e);
    fl_env_share(cls->cls.attrs);
    int saved_loop = c->loop_depth;
    c->loop_depth = 0;
    Flow f = fl_ev_block(c, cls->cls.attrs, &s->cls.body);
    c->loop_depth = saved_loop;
    /* the functions the body defined are the methods: they close over e, and super() in them
     * starts from this class */
    FlMap *m = &cls->cls.attrs->map;
    for (size_t i = 0; i < m->cap; i++) {
        if (!fl_map_slot_live(m, i)) continue;
        FlValue *v = method_func(m->buckets[i].val);
        if (v && v->func.closure == cls->cls.attrs) {
            v->func.closure = e;
            v->func.owner = cls;
        }
    }
    FlValue *d = fl_ev_decorate(c, e, &s->cls.decos, cls);
    fl_env_set(e, s->cls.name, d);
    return f == FLOW_ERROR || d->kind == VK_ERROR ? FLOW_ERROR : FLOW_NORMAL;
}

/* The initialiser of a class without __init__ (object's): no arguments, except that an
 * exception keeps its arguments as .args, as Python's BaseException does. */
static FlValue *object_init(Ctx *c, FlValue *self, CallArgs *a) {
    bool is_exc = self->kind == VK_RECORD && fl_ev_is_subclass(self->rec.cls, exception_class(c));
    if (!is_exc && (a->npos || a->nkw))
        return fl_ev_error(c, a->span, "%s() takes no arguments", fl_v_type_name(self));
    if (is_exc) {
        if (a->nkw) return fl_ev_error(c, a->span, "%s() takes no keyword arguments", fl_v_type_name(self));
        FlValue *args = fl_v_list(c, VK_TUPLE);
        for (size_t i = 0; i < a->npos; i++) fl_v_list_push(c, args, a->pos[i]);
        fl_v_rec_set(c, self, "args", args);
    }
    return c->none;
}

FlValue *fl_ev_instantiate(Ctx *c, FlValue *cls, CallArgs *a) {
    FlValue *obj = fl_v_record(c, cls->cls.name);
    obj->rec.cls = cls;
    FlValue *init = fl_ev_class_attr(cls, "__init__");
    FlValue *r = init ? fl_ev_call(c, fl_ev_bind_method(c, init, obj), a) : object_init(c, obj, a);
    if (r->kind == VK_ERROR) return r;
    if (r->kind != VK_NONE)
        return fl_ev_error(c, a->span, "__init__() should return None, not '%s'", fl_v_type_name(r));
    return obj;
}

/* super() in a method (the class that defined it and its first argument), or super(C, obj). */
static FlValue *b_super(Ctx *c, FlValue *self, CallArgs *a) {
    ARGS("super", "type= obj=", 2);
    FlValue *owner = v[0] ? v[0] : c->cur_owner, *obj = v[1] ? v[1] : v[0] ? NULL : c->cur_self;
    if (!owner || !obj) return fl_ev_error(c, a->span, "super() without arguments is only valid in a method");
    if (owner->kind != VK_CLASS) return fl_ev_error(c, a->span, "super() argument 1 must be a class, found %s", fl_v_type_name(owner));
    if (obj->kind != VK_RECORD || !fl_ev_is_subclass(obj->rec.cls, owner))
        return fl_ev_error(c, a->span, "super(): the object must be an instance of '%s'", owner->cls.name);
    FlValue *r = fl_v_record(c, "super");
    r->rec.cls = owner->cls.base;
    r->rec.bind = obj;
    if (!fl_ev_class_attr(owner->cls.base, "__init__")) /* object's, so that super().__init__() works */
        fl_v_rec_set(c, r, "__init__", fl_v_builtin(c, "__init__", object_init, obj));
    return r;
}

/* The exception classes: BaseException, Exception and the usual ones below it. */
static const struct {
    const char *name, *base;
} exceptions[] = {
    {"BaseException", NULL},          {"Exception", "BaseException"},    {"ValueError", "Exception"},
    {"TypeError", "Exception"},       {"RuntimeError", "Exception"},     {"NotImplementedError", "RuntimeError"},
    {"KeyError", "Exception"},        {"IndexError", "Exception"},       {"AttributeError", "Exception"},
    {"AssertionError", "Exception"},  {"ZeroDivisionError", "Exception"}, {"ImportError", "Exception"},
};

void fl_ev_pyclass_install(Ctx *c) {
    for (size_t i = 0; i < FL_ARRAY_LEN(exceptions); i++) {
        FlValue *cls = fl_v_new(c, VK_CLASS);
        cls->cls.name = exceptions[i].name;
        cls->cls.base = exceptions[i].base ? fl_env_find(c->builtins, fl_intern_str(&c->in, exceptions[i].base)) : NULL;
        cls->cls.attrs = fl_env_new(c, NULL);
        fl_env_set(c->builtins, fl_intern_str(&c->in, exceptions[i].name), cls);
    }
    static const NativeFn fns[] = {
        {"super", b_super}, {"staticmethod", b_staticmethod}, {"classmethod", b_classmethod}, {"property", b_property},
    };
    for (size_t i = 0; i < FL_ARRAY_LEN(fns); i++)
        fl_env_set(c->builtins, fl_intern_str(&c->in, fns[i].name), fl_v_builtin(c, fns[i].name, fns[i].fn, NULL));
}
