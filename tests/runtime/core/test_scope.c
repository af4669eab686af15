/* test_scope.c: scope semantics (parent lookup, shadowing, layouts, aliases, replace-whole) and
 * concurrent readers and writers (run under TSan with the `concurrency` label). */
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#include "tests/runtime/core/ct.h"

static FlTensor filled(int64_t n, double v) {
    FlTensor t = FL_TENSOR_INIT;
    FlErr e;
    CU_ASSERT_EQUAL_FATAL(fl_tensor_alloc(&e, &t, FL_DT_FLOAT32, 1, &n), FL_OK);
    float *p = fl_tensor_data(&t);
    for (int64_t i = 0; i < n; i++) p[i] = (float)v;
    return t;
}

static void test_parent_lookup(void) {
    FlScope *root = fl_scope_new(NULL);
    FlScope *child = fl_scope_new(root);
    FlTensor a = filled(2, 1), b = filled(2, 2);
    fl_scope_set_tensor(root, "a", &a);
    CU_ASSERT_PTR_EQUAL(fl_scope_find(child, "a"), fl_scope_find(root, "a"));
    CU_ASSERT_PTR_NULL(fl_scope_find_local(child, "a"));
    CU_ASSERT_PTR_NULL(fl_scope_find(root, "nope"));
    fl_scope_set_tensor(child, "a", &b); /* shadows */
    CU_ASSERT_EQUAL(ct_get(child, "a", 0), 2);
    CU_ASSERT_EQUAL(ct_get(root, "a", 0), 1);
    /* the child keeps its parent alive */
    fl_scope_free(root);
    CU_ASSERT_EQUAL(fl_scope_find(fl_scope_parent(child), "a") != NULL, 1);
    FlErr e;
    FlTensor t = FL_TENSOR_INIT;
    CU_ASSERT_EQUAL(fl_scope_get_tensor(child, "zz", &t, &e), FL_ERROR);
    CT_MSG(e.msg, "no var named 'zz' in the scope");
    fl_scope_var(child, "empty");
    CU_ASSERT_EQUAL(fl_scope_get_tensor(child, "empty", &t, &e), FL_ERROR);
    CT_MSG(e.msg, "var 'empty' holds no tensor");
    fl_scope_free(child);
    fl_tensor_fini(&a);
    fl_tensor_fini(&b);
}

static void test_replace_whole(void) {
    FlScope *s = fl_scope_new(NULL);
    FlTensor a = filled(4, 1), b = filled(4, 2), held = FL_TENSOR_INIT;
    fl_scope_set_tensor(s, "w", &a);
    FlVar *v = fl_scope_find(s, "w");
    CU_ASSERT_TRUE(fl_var_get_tensor(v, &held));
    CU_ASSERT_PTR_EQUAL(held.buf, a.buf); /* shared, not copied */
    fl_var_set_tensor(v, &b);
    /* the reader's tensor is the old, whole one */
    CU_ASSERT_EQUAL(fl_tensor_get(&held, 3), 1);
    CU_ASSERT_EQUAL(ct_get(s, "w", 3), 2);
    CU_ASSERT_EQUAL(fl_buffer_refs(a.buf), 2); /* a and held; the var let go */
    CU_ASSERT_EQUAL(fl_var_tag(v), FL_VAR_TAG_TENSOR);
    int *obj = fl_xmalloc(sizeof *obj);
    fl_var_set_object(v, obj, free);
    CU_ASSERT_PTR_EQUAL(fl_var_get_object(v), obj);
    CU_ASSERT_FALSE(fl_var_get_tensor(v, &held));
    CU_ASSERT_PTR_NULL(held.buf);
    fl_scope_free(s);
    fl_tensor_fini(&a);
    fl_tensor_fini(&b);
}

/* A reader that takes the var's tensor while the writer holds it locked (fl_var_lock_sole). */
typedef struct LockReader {
    FlVar *v;
    atomic_int done;
    float got;
} LockReader;

static void *lock_reader(void *p) {
    LockReader *r = p;
    FlTensor t = FL_TENSOR_INIT;
    CU_ASSERT_TRUE(fl_var_get_tensor(r->v, &t));
    r->got = ((const float *)fl_tensor_data(&t))[0];
    atomic_store(&r->done, 1);
    fl_tensor_fini(&t);
    return NULL;
}

/* fl_var_lock_sole: true only while the var and the caller's tensor are the buffer's only
 * holders (and the tensor is the var's); the var then stays locked, so a reader waits for the
 * write and sees it whole; with another holder, another buffer or another view, false and
 * nothing locked. */
static void test_lock_sole(void) {
    FlScope *s = fl_scope_new(NULL);
    FlTensor a = filled(4, 1), b = filled(4, 2), extra = FL_TENSOR_INIT, view = FL_TENSOR_INIT;
    fl_scope_set_tensor(s, "w", &a);
    FlVar *v = fl_scope_find(s, "w");
    CU_ASSERT_FALSE(fl_var_lock_sole(v, &b)); /* not the var's buffer */
    fl_tensor_ref(&extra, &a);
    CU_ASSERT_FALSE(fl_var_lock_sole(v, &a)); /* a third holder */
    CU_ASSERT_TRUE(fl_var_get_tensor(v, &extra)); /* not left locked */
    fl_tensor_fini(&extra);
    FlErr e;
    CU_ASSERT_EQUAL_FATAL(fl_tensor_view(&e, &view, &a, 1, 1, (int64_t[]){2}), FL_OK);
    CU_ASSERT_FALSE(fl_var_lock_sole(v, &view)); /* another view of it (and a third holder) */
    fl_tensor_fini(&view);
    CU_ASSERT_TRUE_FATAL(fl_var_lock_sole(v, &a));
    LockReader r = {.v = v};
    pthread_t th;
    pthread_create(&th, NULL, lock_reader, &r);
    struct timespec ms50 = {0, 50 * 1000 * 1000};
    nanosleep(&ms50, NULL);
    CU_ASSERT_EQUAL(atomic_load(&r.done), 0); /* waits for the unlock */
    ((float *)fl_tensor_data(&a))[0] = 7;
    fl_var_unlock_sole(v);
    pthread_join(th, NULL);
    CU_ASSERT_EQUAL(r.got, 7);
    fl_scope_free(s);
    CU_ASSERT_EQUAL(fl_buffer_refs(a.buf), 1);
    fl_tensor_fini(&a);
    fl_tensor_fini(&b);
}

static void test_layout_and_alias(void) {
    FlScopeLayout l;
    fl_scope_layout_init(&l);
    CU_ASSERT_EQUAL(fl_scope_layout_add(&l, "x"), 0);
    CU_ASSERT_EQUAL(fl_scope_layout_add(&l, "y"), 1);
    CU_ASSERT_EQUAL(fl_scope_layout_add(&l, "x"), 0);
    CU_ASSERT_EQUAL(fl_scope_layout_find(&l, "z"), -1);
    FlScope *root = fl_scope_new(NULL);
    FlScope *s = fl_scope_new_layout(root, &l);
    CU_ASSERT_PTR_NULL(fl_scope_slot(s, 0));
    FlVar *x = fl_scope_var(s, "x"); /* a layout name: goes to its slot */
    CU_ASSERT_PTR_EQUAL(fl_scope_slot(s, 0), x);
    CU_ASSERT_PTR_EQUAL(fl_scope_find(s, "x"), x);
    FlVar *other = fl_var_new();
    CU_ASSERT_PTR_EQUAL(fl_scope_slot_set(s, 0, other), x); /* set once */
    /* alias: y of s and w of root are one var */
    FlVar *w = fl_scope_var(root, "w");
    CU_ASSERT_TRUE(fl_scope_alias(s, "y", w));
    CU_ASSERT_FALSE(fl_scope_alias(s, "y", other));
    FlTensor t = filled(1, 7);
    fl_var_set_tensor(fl_scope_find(s, "y"), &t);
    CU_ASSERT_EQUAL(ct_get(root, "w", 0), 7);
    /* a name outside the layout goes to the map */
    FlVar *m = fl_scope_var(s, "extra");
    CU_ASSERT_PTR_EQUAL(fl_scope_find_local(s, "extra"), m);
    CU_ASSERT_TRUE(fl_scope_alias(s, "extra2", m));
    CU_ASSERT_PTR_EQUAL(fl_scope_find(s, "extra2"), m);
    fl_var_release(other);
    fl_tensor_fini(&t);
    fl_scope_free(s);
    fl_scope_free(root);
    fl_scope_layout_fini(&l);
}

/* ---- concurrency: writers replace "w" by tensors whose elements all equal one generation
 * number; readers check every tensor they get is uniform (a torn read would mix two). Other
 * threads create the same names at once and must agree on the vars. ---- */
enum { NT = 4, ITERS = 2000, LEN = 256 };
typedef struct Shared {
    FlScope *s;
    FlVar *seen[2 * NT][8];
    atomic_int bad;
} Shared;
typedef struct Arg {
    Shared *sh;
    int id;
} Arg;

static void *writer(void *p) {
    Arg *a = p;
    FlVar *v = fl_scope_find(a->sh->s, "w");
    for (int i = 0; i < ITERS; i++) {
        FlTensor t = filled(LEN, a->id * ITERS + i);
        fl_var_take_tensor(v, &t);
    }
    return NULL;
}

static void *reader(void *p) {
    Arg *a = p;
    FlScope *child = fl_scope_new(a->sh->s); /* reads go through a child, like call scopes */
    FlTensor t = FL_TENSOR_INIT;
    for (int i = 0; i < ITERS; i++) {
        if (!fl_var_get_tensor(fl_scope_find(child, "w"), &t)) continue;
        const float *d = fl_tensor_data(&t);
        for (int k = 1; k < LEN; k++)
            if (d[k] != d[0]) atomic_fetch_add(&a->sh->bad, 1);
    }
    fl_tensor_fini(&t);
    fl_scope_free(child);
    return NULL;
}

static void *creator(void *p) {
    Arg *a = p;
    char name[16];
    for (int k = 0; k < 8; k++) {
        snprintf(name, sizeof name, "v%d", k);
        a->sh->seen[a->id][k] = fl_scope_var(a->sh->s, name);
    }
    return NULL;
}

static void test_concurrent_readers_writers(void) {
    Shared sh = {.s = fl_scope_new(NULL)};
    atomic_init(&sh.bad, 0);
    FlTensor t0 = filled(LEN, -1);
    fl_scope_set_tensor(sh.s, "w", &t0);
    pthread_t th[4 * NT];
    Arg args[4 * NT];
    for (int i = 0; i < NT; i++) {
        args[i] = (Arg){&sh, i};
        args[NT + i] = (Arg){&sh, i};
        args[2 * NT + i] = (Arg){&sh, i};
        args[3 * NT + i] = (Arg){&sh, NT + i};
        pthread_create(&th[i], NULL, writer, &args[i]);
        pthread_create(&th[NT + i], NULL, reader, &args[NT + i]);
        pthread_create(&th[2 * NT + i], NULL, creator, &args[2 * NT + i]);
        pthread_create(&th[3 * NT + i], NULL, creator, &args[3 * NT + i]);
    }
    for (int i = 0; i < 4 * NT; i++) pthread_join(th[i], NULL);
    CU_ASSERT_EQUAL(atomic_load(&sh.bad), 0);
    for (int i = 1; i < 2 * NT; i++)
        for (int k = 0; k < 8; k++) CU_ASSERT_PTR_EQUAL(sh.seen[i][k], sh.seen[0][k]);
    fl_tensor_fini(&t0);
    fl_scope_free(sh.s);
}

int main(void) {
    static const CtCase cases[] = {
        CT_TEST(test_parent_lookup),
        CT_TEST(test_replace_whole),
        CT_TEST(test_lock_sole),
        CT_TEST(test_layout_and_alias),
        CT_TEST(test_concurrent_readers_writers),
    };
    return ct_run("scope", cases, (int)FL_ARRAY_LEN(cases));
}
