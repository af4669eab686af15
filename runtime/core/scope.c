/* scope.c: vars (a tagged, mutex-guarded slot with an atomic reference count) and scopes (a
 * rwlock-guarded name map plus optional layout slots, with a parent). See scope.h for the memory
 * model; the invariant that makes borrowed var pointers safe: a slot is written once (NULL -> var)
 * and a map entry is never removed or replaced, so a var stays referenced by its scope until the
 * scope is freed. */
#include "runtime/core/scope.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

struct FlVar {
    atomic_long refs;
    pthread_mutex_t mu;
    FlVarTag tag;
    FlTensor t;                   /* FL_VAR_TAG_TENSOR; FL_VAR_TAG_ROWS: the value block */
    FlTensor rows;                /* FL_VAR_TAG_ROWS: the row indices */
    int64_t height;               /* FL_VAR_TAG_ROWS */
    void *obj;                    /* FL_VAR_TAG_OBJECT */
    void (*obj_release)(void *);
    char *label;                  /* fl_var_set_label; independent of the content */
};

struct FlScope {
    atomic_long refs;
    FlScope *parent;
    bool weak_parent;      /* parent not retained (fl_scope_new_layout_weak) */
    pthread_rwlock_t lock; /* guards map and keys */
    FlMap map;             /* name -> FlVar* (one reference each) */
    FlArena keys;          /* the map's key strings */
    const FlScopeLayout *layout;
    _Atomic(FlVar *) *slots; /* layout->n of them, one reference each */
};

/* ---------------------------------------------------------------- vars */

FlVar *fl_var_new(void) {
    FlVar *v = fl_xcalloc(1, sizeof *v);
    atomic_init(&v->refs, 1);
    pthread_mutex_init(&v->mu, NULL);
    v->tag = FL_VAR_TAG_EMPTY;
    fl_tensor_init(&v->t);
    fl_tensor_init(&v->rows);
    return v;
}

void fl_var_retain(FlVar *v) {
    if (v) atomic_fetch_add_explicit(&v->refs, 1, memory_order_relaxed);
}

/* Drops the content; the caller frees what it returns outside the lock. Only the buffers are
 * kept (what releasing needs), and the rows tensor is reset only when it held one: a var's
 * content changes with every op that writes it. */
typedef struct Old {
    FlBuffer *t, *rows;
    void *obj;
    void (*obj_release)(void *);
} Old;

static Old take_content(FlVar *v) {
    Old o = {.t = v->t.buf, .rows = v->rows.buf, .obj = v->obj, .obj_release = v->obj_release};
    fl_tensor_init(&v->t);
    if (o.rows) fl_tensor_init(&v->rows);
    v->height = 0;
    v->obj = NULL;
    v->obj_release = NULL;
    v->tag = FL_VAR_TAG_EMPTY;
    return o;
}

static void drop_old(Old *o) {
    if (o->t) fl_buffer_release(o->t);
    if (o->rows) fl_buffer_release(o->rows);
    if (o->obj && o->obj_release) o->obj_release(o->obj);
}

void fl_var_release(FlVar *v) {
    if (!v) return;
    if (atomic_fetch_sub_explicit(&v->refs, 1, memory_order_acq_rel) != 1) return;
    Old o = take_content(v);
    drop_old(&o);
    free(v->label);
    pthread_mutex_destroy(&v->mu);
    free(v);
}

FlVarTag fl_var_tag(FlVar *v) {
    pthread_mutex_lock(&v->mu);
    FlVarTag t = v->tag;
    pthread_mutex_unlock(&v->mu);
    return t;
}

bool fl_var_get_tensor(FlVar *v, FlTensor *out) {
    FlTensor old = *out;
    bool ok;
    pthread_mutex_lock(&v->mu);
    ok = v->tag == FL_VAR_TAG_TENSOR;
    if (ok) {
        *out = v->t;
        fl_buffer_retain(out->buf);
    }
    pthread_mutex_unlock(&v->mu);
    if (!ok) fl_tensor_init(out);
    fl_tensor_fini(&old);
    return ok;
}

void fl_var_take_tensor(FlVar *v, FlTensor *t) {
    pthread_mutex_lock(&v->mu);
    Old o = take_content(v);
    v->t = *t;
    v->tag = FL_VAR_TAG_TENSOR;
    pthread_mutex_unlock(&v->mu);
    fl_tensor_init(t);
    drop_old(&o);
}

bool fl_var_lock_sole(FlVar *v, const FlTensor *held) {
    if (!held->buf) return false;
    pthread_mutex_lock(&v->mu);
    const FlTensor *t = &v->t;
    /* under v's lock nobody can take a new reference from v; every other holder of the buffer
     * counts in its reference count, so 2 (v's and held's) means there is none */
    if (v->tag == FL_VAR_TAG_TENSOR && t->buf == held->buf && t->offset == held->offset &&
        t->dtype == held->dtype && fl_tensor_same_shape(t, held) && fl_buffer_refs(t->buf) == 2)
        return true;
    pthread_mutex_unlock(&v->mu);
    return false;
}

void fl_var_unlock_sole(FlVar *v) { pthread_mutex_unlock(&v->mu); }

bool fl_var_get_rows(FlVar *v, FlSelectedRows *out) {
    FlSelectedRows old = *out;
    bool ok;
    pthread_mutex_lock(&v->mu);
    ok = v->tag == FL_VAR_TAG_ROWS;
    if (ok) {
        out->value = v->t;
        out->rows = v->rows;
        out->height = v->height;
        fl_buffer_retain(out->value.buf);
        fl_buffer_retain(out->rows.buf);
    }
    pthread_mutex_unlock(&v->mu);
    if (!ok) fl_rows_init(out);
    fl_rows_fini(&old);
    return ok;
}

void fl_var_take_rows(FlVar *v, FlSelectedRows *r) {
    pthread_mutex_lock(&v->mu);
    Old o = take_content(v);
    v->t = r->value;
    v->rows = r->rows;
    v->height = r->height;
    v->tag = FL_VAR_TAG_ROWS;
    pthread_mutex_unlock(&v->mu);
    fl_rows_init(r);
    drop_old(&o);
}

void fl_var_set_tensor(FlVar *v, const FlTensor *t) {
    FlTensor r = *t;
    fl_buffer_retain(r.buf);
    fl_var_take_tensor(v, &r);
}

void fl_var_set_object(FlVar *v, void *obj, void (*release)(void *)) {
    pthread_mutex_lock(&v->mu);
    Old o = take_content(v);
    v->obj = obj;
    v->obj_release = release;
    v->tag = FL_VAR_TAG_OBJECT;
    pthread_mutex_unlock(&v->mu);
    drop_old(&o);
}

void *fl_var_retain_object(FlVar *v, void (*retain)(void *)) {
    pthread_mutex_lock(&v->mu);
    void *obj = v->tag == FL_VAR_TAG_OBJECT ? v->obj : NULL;
    if (obj) retain(obj);
    pthread_mutex_unlock(&v->mu);
    return obj;
}

void fl_var_set_label(FlVar *v, const char *label) {
    char *l = label ? fl_xstrdup(label) : NULL;
    pthread_mutex_lock(&v->mu);
    char *old = v->label;
    v->label = l;
    pthread_mutex_unlock(&v->mu);
    free(old);
}

char *fl_var_label_dup(FlVar *v) {
    pthread_mutex_lock(&v->mu);
    char *l = v->label ? fl_xstrdup(v->label) : NULL;
    pthread_mutex_unlock(&v->mu);
    return l;
}

const char *fl_var_label(FlVar *v) {
    pthread_mutex_lock(&v->mu);
    const char *l = v->label;
    pthread_mutex_unlock(&v->mu);
    return l;
}

void *fl_var_get_object(FlVar *v) {
    pthread_mutex_lock(&v->mu);
    void *o = v->tag == FL_VAR_TAG_OBJECT ? v->obj : NULL;
    pthread_mutex_unlock(&v->mu);
    return o;
}

/* ---------------------------------------------------------------- layouts */

void fl_scope_layout_init(FlScopeLayout *l) {
    memset(l, 0, sizeof *l);
    fl_map_init(&l->index);
}

void fl_scope_layout_fini(FlScopeLayout *l) {
    fl_map_fini(&l->index);
    free(l->names);
    memset(l, 0, sizeof *l);
}

size_t fl_scope_layout_add(FlScopeLayout *l, const char *name) {
    long i = fl_scope_layout_find(l, name);
    if (i >= 0) return (size_t)i;
    fl_grow((void **)&l->names, &l->cap, l->n + 1, sizeof *l->names);
    l->names[l->n] = name;
    fl_map_put_str(&l->index, name, (void *)(uintptr_t)(l->n + 1));
    return l->n++;
}

long fl_scope_layout_find(const FlScopeLayout *l, const char *name) {
    void *p = fl_map_find_str(&l->index, name);
    return p ? (long)((uintptr_t)p - 1) : -1;
}

/* ---------------------------------------------------------------- scopes */

FlScope *fl_scope_new_layout(FlScope *parent, const FlScopeLayout *layout) {
    FlScope *s = fl_xcalloc(1, sizeof *s);
    atomic_init(&s->refs, 1);
    s->parent = parent;
    fl_scope_retain(parent);
    pthread_rwlock_init(&s->lock, NULL);
    fl_map_init(&s->map);
    fl_arena_init(&s->keys);
    s->layout = layout;
    if (layout && layout->n) {
        s->slots = fl_xmalloc(fl_mul_size(layout->n, sizeof *s->slots));
        for (size_t i = 0; i < layout->n; i++) atomic_init(&s->slots[i], NULL);
    }
    return s;
}

FlScope *fl_scope_new_layout_weak(FlScope *parent, const FlScopeLayout *layout) {
    FlScope *s = fl_scope_new_layout(NULL, layout);
    s->parent = parent;
    s->weak_parent = true;
    return s;
}

FlScope *fl_scope_new(FlScope *parent) { return fl_scope_new_layout(parent, NULL); }

void fl_scope_retain(FlScope *s) {
    if (s) atomic_fetch_add_explicit(&s->refs, 1, memory_order_relaxed);
}

void fl_scope_release(FlScope *s) {
    while (s && atomic_fetch_sub_explicit(&s->refs, 1, memory_order_acq_rel) == 1) {
        for (size_t i = 0; i < s->map.cap; i++)
            if (fl_map_slot_live(&s->map, i)) fl_var_release(s->map.buckets[i].val);
        if (s->slots)
            for (size_t i = 0; i < s->layout->n; i++)
                fl_var_release(atomic_load_explicit(&s->slots[i], memory_order_acquire));
        free(s->slots);
        fl_map_fini(&s->map);
        fl_arena_fini(&s->keys);
        pthread_rwlock_destroy(&s->lock);
        FlScope *parent = s->weak_parent ? NULL : s->parent;
        free(s);
        s = parent; /* drop the reference this scope held, iteratively */
    }
}

void fl_scope_free(FlScope *s) { fl_scope_release(s); }

FlScope *fl_scope_parent(const FlScope *s) { return s->parent; }

FlVar *fl_scope_slot(FlScope *s, size_t slot) {
    FL_ASSERT(s->layout && slot < s->layout->n);
    return atomic_load_explicit(&s->slots[slot], memory_order_acquire);
}

FlVar *fl_scope_slot_set(FlScope *s, size_t slot, FlVar *v) {
    FL_ASSERT(s->layout && slot < s->layout->n);
    FlVar *expect = NULL;
    fl_var_retain(v);
    if (atomic_compare_exchange_strong_explicit(&s->slots[slot], &expect, v, memory_order_acq_rel,
                                                memory_order_acquire))
        return v;
    fl_var_release(v); /* undo our retain; the caller's reference is untouched */
    return expect;
}

FlVar *fl_scope_slot_var(FlScope *s, size_t slot) {
    FlVar *v = fl_scope_slot(s, slot);
    if (v) return v;
    FlVar *n = fl_var_new();
    v = fl_scope_slot_set(s, slot, n);
    fl_var_release(n); /* the slot holds it now (or another thread's var won) */
    return v;
}

FlVar *fl_scope_find_local(FlScope *s, const char *name) {
    if (s->layout) {
        long i = fl_scope_layout_find(s->layout, name);
        if (i >= 0) {
            FlVar *v = atomic_load_explicit(&s->slots[i], memory_order_acquire);
            if (v) return v;
        }
    }
    pthread_rwlock_rdlock(&s->lock);
    FlVar *v = s->map.len ? fl_map_find_str(&s->map, name) : NULL;
    pthread_rwlock_unlock(&s->lock);
    return v;
}

FlVar *fl_scope_find(FlScope *s, const char *name) {
    for (; s; s = s->parent) {
        FlVar *v = fl_scope_find_local(s, name);
        if (v) return v;
    }
    return NULL;
}

/* Inserts v (retained) under name unless present; returns the var now bound. */
static FlVar *map_bind(FlScope *s, const char *name, FlVar *v) {
    pthread_rwlock_wrlock(&s->lock);
    FlVar *cur = fl_map_find_str(&s->map, name);
    if (!cur) {
        fl_var_retain(v);
        fl_map_put_str(&s->map, fl_arena_strdup(&s->keys, name), v);
        cur = v;
    }
    pthread_rwlock_unlock(&s->lock);
    return cur;
}

FlVar *fl_scope_var(FlScope *s, const char *name) {
    if (s->layout) {
        long i = fl_scope_layout_find(s->layout, name);
        if (i >= 0) return fl_scope_slot_var(s, (size_t)i);
    }
    FlVar *v = fl_scope_find_local(s, name);
    if (v) return v;
    FlVar *n = fl_var_new();
    v = map_bind(s, name, n);
    fl_var_release(n);
    return v;
}

bool fl_scope_alias(FlScope *s, const char *name, FlVar *v) {
    if (s->layout) {
        long i = fl_scope_layout_find(s->layout, name);
        if (i >= 0) return fl_scope_slot_set(s, (size_t)i, v) == v;
    }
    return map_bind(s, name, v) == v;
}

FlStatus fl_scope_get_tensor(FlScope *s, const char *name, FlTensor *out, FlErr *e) {
    FlVar *v = fl_scope_find(s, name);
    if (!v) return fl_err(e, "no var named '%s' in the scope", name);
    if (fl_var_get_tensor(v, out)) return FL_OK;
    FlSelectedRows r;
    fl_rows_init(&r);
    if (!fl_var_get_rows(v, &r)) return fl_err(e, "var '%s' holds no tensor", name);
    FlStatus st = fl_rows_to_dense(e, &r, out); /* a SelectedRows reads as the tensor it stands for */
    fl_rows_fini(&r);
    return st;
}

void fl_scope_set_tensor(FlScope *s, const char *name, const FlTensor *t) {
    fl_var_set_tensor(fl_scope_var(s, name), t);
}
