/* fluidc_shim.c: the flat ABI of libfluidc_py.so, which the Python package fluidc
 * (python/fluidc/__init__.py) calls through ctypes. It wraps runtime/api.h and runtime/params.h
 * with what ctypes handles easily: opaque handles, plain integers and pointers, feeds as an array
 * of FlpyFeed structs, fetched tensors as opaque handles with accessors and a copy-out into a
 * caller's buffer, and errors as a message written into the caller's char buffer (one buffer per
 * call, so calls from many threads never share one).
 *
 * An FlpyProgram is a loaded program with a reference count: the Python Program holds one and
 * every executor made from it another, so the program lives as long as any executor runs it,
 * whatever Python drops first. An FlpyExecutor is an executor with its own scope: the Python
 * Executor. Every function may be called from any number of threads at once (ctypes releases
 * the GIL for the call) except the _free functions, as in runtime/api.h (the Python Executor
 * waits for the calls in flight before it frees its handle). Functions that can fail return 0
 * or -1 (or NULL) and write the message into err[0..errlen). Nothing here aborts on bad input.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler/ir/ir.h"
#include "runtime/api.h"
#include "runtime/params.h"

#define FLPY_API __attribute__((visibility("default")))
/* The ABI's version: __init__.py refuses a library of another version. */
#define FLPY_ABI_VERSION 4

typedef struct FlpyProgram {
    FlLoadedProgram *prog;
    atomic_int refs; /* the Python Program's and one per executor */
} FlpyProgram;

typedef struct FlpyExecutor {
    FlpyProgram *prog; /* a reference: the program outlives the executor */
    FlExecutor *ex;
    FlScope *scope;
} FlpyExecutor;

/* One feed: a C-contiguous array of `dtype` (FlDType) with shape[0..ndim). */
typedef struct FlpyFeed {
    const char *name;
    int32_t dtype;
    int32_t ndim;
    const int64_t *shape;
    const void *data;
} FlpyFeed;

FLPY_API void flpy_tensor_free(FlTensor *t);

static void put_msg(char *err, size_t errlen, const char *msg) {
    if (err && errlen) snprintf(err, errlen, "%s", msg);
}

static int fail(char *err, size_t errlen, const FlErr *e) {
    put_msg(err, errlen, fl_error_message(e));
    return -1;
}

FLPY_API int flpy_abi_version(void) { return FLPY_ABI_VERSION; }

/* ---- programs ---- */

FLPY_API FlpyProgram *flpy_program_load(const char *path, char *err, size_t errlen) {
    FlErr e;
    FlLoadedProgram *p = NULL;
    if (!path) {
        put_msg(err, errlen, "fluidc.load: no path");
        return NULL;
    }
    if (fl_program_load(path, &p, &e) != FL_OK) {
        fail(err, errlen, &e);
        return NULL;
    }
    FlpyProgram *h = calloc(1, sizeof *h);
    if (!h) {
        fl_program_free(p);
        put_msg(err, errlen, "fluidc.load: out of memory");
        return NULL;
    }
    h->prog = p;
    atomic_init(&h->refs, 1);
    return h;
}

/* Drops a reference (the Python Program's, or an executor's); the last one frees the program. */
FLPY_API void flpy_program_free(FlpyProgram *h) {
    if (!h || atomic_fetch_sub(&h->refs, 1) != 1) return;
    fl_program_free(h->prog);
    free(h);
}

/* An inference model's feed names (targets 0) or target names (targets 1), each followed by a NUL,
 * into buf[0..len) when they fit; returns the bytes they take, or -1 when the program is not an
 * inference model. */
FLPY_API long flpy_program_model_names(FlpyProgram *h, int targets, char *buf, size_t len) {
    const FlInferenceSpec *s = fl_program_bundle(h->prog)->inference;
    if (!s) return -1;
    char *const *v = targets ? s->targets.data : s->feeds.data;
    size_t n = targets ? s->targets.len : s->feeds.len, need = 0;
    for (size_t i = 0; i < n; i++) need += strlen(v[i]) + 1;
    for (size_t i = 0, at = 0; need <= len && i < n; i++) {
        size_t k = strlen(v[i]) + 1;
        memcpy(buf + at, v[i], k);
        at += k;
    }
    return (long)need;
}

/* ---- executors (each with its scope) ---- */

FLPY_API FlpyExecutor *flpy_executor_new(FlpyProgram *p, uint64_t seed, char *err, size_t errlen) {
    FlErr e;
    if (!p) {
        put_msg(err, errlen, "fluidc.Executor: no program");
        return NULL;
    }
    FlpyExecutor *x = calloc(1, sizeof *x);
    if (!x) {
        put_msg(err, errlen, "fluidc.Executor: out of memory");
        return NULL;
    }
    FlExecutorOptions opt = {.seed = seed};
    if (fl_executor_new(p->prog, &opt, &x->ex, &e) != FL_OK) {
        fail(err, errlen, &e);
        free(x);
        return NULL;
    }
    atomic_fetch_add(&p->refs, 1);
    x->prog = p;
    x->scope = fl_scope_new(NULL);
    return x;
}

FLPY_API void flpy_executor_free(FlpyExecutor *x) {
    if (!x) return;
    fl_scope_free(x->scope);
    fl_executor_free(x->ex);
    flpy_program_free(x->prog);
    free(x);
}

FLPY_API int flpy_executor_run_startup(FlpyExecutor *x, char *err, size_t errlen) {
    FlErr e;
    return fl_executor_run_startup(x->ex, x->scope, &e) == FL_OK ? 0 : fail(err, errlen, &e);
}

/* A tensor of t's dtype and shape holding a copy of data. */
static int make_tensor(const FlpyFeed *f, FlTensor *t, FlErr *e) {
    if (f->dtype < 0 || f->dtype >= FL_DT_COUNT)
        return fl_err(e, "feed '%s': dtype code %d is not one of the runtime's", f->name, f->dtype);
    if (f->ndim < 0 || f->ndim > FL_MAX_DIMS)
        return fl_err(e, "feed '%s': %d dimensions (at most %d)", f->name, f->ndim, FL_MAX_DIMS);
    if (fl_tensor_alloc_uninit(e, t, (FlDType)f->dtype, f->ndim, f->shape) != FL_OK) {
        char m[sizeof e->msg];
        snprintf(m, sizeof m, "%s", fl_error_message(e));
        return fl_err(e, "feed '%s': %s", f->name, m);
    }
    size_t n = fl_tensor_nbytes(t);
    if (n) memcpy(fl_tensor_data(t), f->data, n);
    return FL_OK;
}

/* Runs the main program (predict = 0: fl_executor_run, a whole step; 1: fl_executor_predict)
 * with feeds[0..nfeeds) and fetches the vars fetch_names[0..nfetches) into out[0..nfetches):
 * new tensor handles that the caller frees with flpy_tensor_free. On error out is untouched. */
FLPY_API int flpy_executor_run(FlpyExecutor *x, int predict, const FlpyFeed *feeds, size_t nfeeds,
                               const char *const *fetch_names, size_t nfetches, FlTensor **out,
                               char *err, size_t errlen) {
    FlErr e;
    int rc = -1;
    FlTensor *ts = calloc(nfeeds ? nfeeds : 1, sizeof *ts);
    FlFeed *fs = calloc(nfeeds ? nfeeds : 1, sizeof *fs);
    FlFetch *fe = calloc(nfetches ? nfetches : 1, sizeof *fe);
    FlTensor **res = calloc(nfetches ? nfetches : 1, sizeof *res);
    size_t made = 0, nres = 0;
    if (!ts || !fs || !fe || !res) {
        put_msg(err, errlen, "out of memory");
        goto done;
    }
    for (; made < nfeeds; made++) {
        fl_tensor_init(&ts[made]);
        if (make_tensor(&feeds[made], &ts[made], &e) != FL_OK) {
            fail(err, errlen, &e);
            goto done;
        }
        fs[made].name = feeds[made].name;
        fs[made].tensor = &ts[made];
    }
    for (size_t i = 0; i < nfetches; i++) {
        fe[i].name = fetch_names[i];
        fl_tensor_init(&fe[i].tensor);
    }
    for (; nres < nfetches; nres++) {
        if (!(res[nres] = malloc(sizeof *res[nres]))) {
            put_msg(err, errlen, "out of memory");
            goto done;
        }
    }
    FlStatus st = predict ? fl_executor_predict(x->ex, x->scope, fs, nfeeds, fe, nfetches, &e)
                          : fl_executor_run(x->ex, x->scope, fs, nfeeds, fe, nfetches, &e);
    if (st != FL_OK) {
        fail(err, errlen, &e);
        goto done;
    }
    for (size_t i = 0; i < nfetches; i++) {
        *res[i] = fe[i].tensor; /* the reference moves to the handle */
        out[i] = res[i];
        res[i] = NULL;
    }
    rc = 0;
done:
    for (size_t i = 0; i < made; i++) fl_tensor_fini(&ts[i]);
    for (size_t i = 0; i < nres; i++) free(res[i]);
    free(ts);
    free(fs);
    free(fe);
    free(res);
    return rc;
}

/* The number of int64 of one fetch's entry in flpy_executor_run_into's meta: dtype, ndim, offset
 * into the scratch buffer, nbytes, then the FL_MAX_DIMS dims. */
#define FLPY_META 12
_Static_assert(4 + FL_MAX_DIMS <= FLPY_META, "FLPY_META too small for FL_MAX_DIMS");

/* flpy_executor_run, and the fetched tensors copied out in the same call (one call from Python
 * per run: the package's fast path). Writes meta[i * FLPY_META ...] for every fetch i: dtype,
 * ndim, offset, nbytes, dims. When all of them fit in scratch[0..scratch_len) one after another
 * (each at a 64-byte aligned offset), copies them there, frees the tensors, sets out[i] = NULL
 * and returns 0; otherwise leaves the tensors in out[] as flpy_executor_run does (the caller takes
 * them with the flpy_tensor_* calls), puts the scratch size they need in meta[nfetches *
 * FLPY_META] and returns 1. A fetched var that holds no data is an error (-1; nothing is kept). */
FLPY_API int flpy_executor_run_into(FlpyExecutor *x, int predict, const FlpyFeed *feeds,
                                    size_t nfeeds, const char *const *fetch_names, size_t nfetches,
                                    FlTensor **out, int64_t *meta, void *scratch,
                                    size_t scratch_len, char *err, size_t errlen) {
    if (flpy_executor_run(x, predict, feeds, nfeeds, fetch_names, nfetches, out, err, errlen))
        return -1;
    size_t need = 0;
    for (size_t i = 0; i < nfetches; i++) {
        const FlTensor *t = out[i];
        int64_t *m = meta + i * FLPY_META;
        if (!fl_tensor_has_data(t)) {
            char msg[512];
            snprintf(msg, sizeof msg, "fetch '%s': the var holds no data", fetch_names[i]);
            put_msg(err, errlen, msg);
            for (size_t j = 0; j < nfetches; j++) flpy_tensor_free(out[j]), out[j] = NULL;
            return -1;
        }
        size_t n = fl_tensor_nbytes(t);
        m[0] = t->dtype;
        m[1] = t->ndim;
        m[2] = (int64_t)need;
        m[3] = (int64_t)n;
        for (int d = 0; d < t->ndim; d++) m[4 + d] = t->ne[d];
        need += (n + 63) & ~(size_t)63;
    }
    meta[nfetches * FLPY_META] = (int64_t)need;
    if (need > scratch_len) return 1;
    for (size_t i = 0; i < nfetches; i++) {
        int64_t *m = meta + i * FLPY_META;
        if (m[3]) memcpy((char *)scratch + m[2], fl_tensor_data(out[i]), (size_t)m[3]);
        flpy_tensor_free(out[i]);
        out[i] = NULL;
    }
    return 0;
}

/* The tensor of scope var `name` (a parameter) as a new handle in *out. */
FLPY_API int flpy_executor_get(FlpyExecutor *x, const char *name, FlTensor **out, char *err,
                               size_t errlen) {
    FlErr e;
    FlTensor *t = malloc(sizeof *t);
    if (!t) {
        put_msg(err, errlen, "out of memory");
        return -1;
    }
    fl_tensor_init(t);
    if (fl_scope_get_tensor(x->scope, name, t, &e) != FL_OK) {
        free(t);
        return fail(err, errlen, &e);
    }
    *out = t;
    return 0;
}

/* Whether `name` is a var of the program's startup or main global block; if not, the message
 * in e names it and the program's persistable vars (what a set usually means). */
static bool is_program_var(const FlpyExecutor *x, const char *name, FlErr *e) {
    const FlBundle *b = fl_program_bundle(x->prog->prog);
    const FlBlock *main0 = fl_ir_block(b->main, 0), *start0 = fl_ir_block(b->startup, 0);
    if (fl_ir_var_find(main0, name) || fl_ir_var_find(start0, name)) return true;
    FlBuf known = {0};
    size_t n = 0;
    for (size_t i = 0; i < main0->vars.len; i++) {
        const FlVarDesc *v = main0->vars.data[i];
        if (!v->persistable) continue;
        if (n++ < 8) fl_buf_printf(&known, "%s'%s'", n > 1 ? ", " : "", v->name);
    }
    if (n > 8) fl_buf_printf(&known, " and %zu more", n - 8);
    fl_err(e, "set: the program has no var '%s' (its parameters and other persistable vars: %s)", name,
           n ? fl_buf_str(&known) : "none");
    fl_buf_free(&known);
    return false;
}

/* Sets scope var `name` (a var of the program: a parameter, or any var of its global blocks) to a
 * copy of the array v. A name the program does not have is an error (a typo made a new var that
 * nothing reads). */
FLPY_API int flpy_executor_set(FlpyExecutor *x, const FlpyFeed *v, char *err, size_t errlen) {
    FlErr e;
    FlTensor t = FL_TENSOR_INIT;
    if (!v->name || !is_program_var(x, v->name, &e)) {
        if (!v->name) fl_err(&e, "set: no var name");
        return fail(err, errlen, &e);
    }
    if (make_tensor(v, &t, &e) != FL_OK) return fail(err, errlen, &e);
    fl_scope_set_tensor(x->scope, v->name, &t);
    fl_tensor_fini(&t);
    return 0;
}

/* Checkpoints: the format and rules of flrun --save / --load (runtime/params.h). */
FLPY_API int flpy_executor_save(FlpyExecutor *x, const char *dir, char *err, size_t errlen) {
    FlErr e;
    return fl_params_save(x->prog->prog, x->scope, dir, &e) == FL_OK ? 0 : fail(err, errlen, &e);
}

FLPY_API int flpy_executor_load(FlpyExecutor *x, const char *dir, char *err, size_t errlen) {
    FlErr e;
    return fl_params_load(x->prog->prog, x->scope, dir, &e) == FL_OK ? 0 : fail(err, errlen, &e);
}

/* ---- fetched tensors ---- */

FLPY_API int flpy_tensor_dtype(const FlTensor *t) { return (int)t->dtype; }
FLPY_API int flpy_tensor_ndim(const FlTensor *t) { return t->ndim; }
/* Writes the shape into shape[0..ndim). */
FLPY_API void flpy_tensor_shape(const FlTensor *t, int64_t *shape) {
    for (int i = 0; i < t->ndim; i++) shape[i] = t->ne[i];
}
/* 1 when the tensor holds data (a var that was declared but never set holds none). */
FLPY_API int flpy_tensor_has_data(const FlTensor *t) { return fl_tensor_has_data(t); }
FLPY_API size_t flpy_tensor_nbytes(const FlTensor *t) { return fl_tensor_nbytes(t); }
/* Copies the elements into dst, which holds n bytes: exactly the tensor's size. */
FLPY_API int flpy_tensor_copy_out(const FlTensor *t, void *dst, size_t n, char *err, size_t errlen) {
    size_t have = fl_tensor_has_data(t) ? fl_tensor_nbytes(t) : 0;
    if (n != have) {
        char m[128];
        snprintf(m, sizeof m, "tensor copy: the tensor has %zu bytes, the buffer %zu", have, n);
        put_msg(err, errlen, m);
        return -1;
    }
    if (n) memcpy(dst, fl_tensor_data(t), n);
    return 0;
}
FLPY_API void flpy_tensor_free(FlTensor *t) {
    if (!t) return;
    fl_tensor_fini(t);
    free(t);
}
